package redisstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// SaveRun stores the run's state; it is kept as long as the run's event log.
func (s *Store) SaveRun(ctx context.Context, r *orchestratorv1.RunState) error {
	b, err := encodeRun(r)
	if err != nil {
		return err
	}
	return savedRun(r.GetRunId(), s.rdb.Set(ctx, s.runKey(r.GetRunId()), b, s.opts.EventTTL).Err())
}

func encodeRun(r *orchestratorv1.RunState) ([]byte, error) {
	if r.GetRunId() == "" {
		return nil, errors.New("save run: empty run id")
	}
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode run %s: %w", r.GetRunId(), err)
	}
	return b, nil
}

func savedRun(runID string, err error) error {
	if err != nil {
		return fmt.Errorf("save run %s: %w", runID, err)
	}
	return nil
}

// GetRun returns the run's last saved state.
func (s *Store) GetRun(ctx context.Context, runID string) (*orchestratorv1.RunState, error) {
	return decodeRun(runID, s.rdb.Get(ctx, s.runKey(runID)))
}

// decodeRun reads the answer of a GET of the run's state.
func decodeRun(runID string, cmd *redis.StringCmd) (*orchestratorv1.RunState, error) {
	b, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	r := &orchestratorv1.RunState{}
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("decode run %s: %w", runID, err)
	}
	return r, nil
}
