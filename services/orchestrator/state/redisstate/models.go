package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// Models is state.Models on the store's Redis: one hash per session (a
// field per call and state), kept as long as the session's hot state.
type Models struct{ s *Store }

// NewModels returns the review models kept in s's Redis.
func NewModels(s *Store) *Models { return &Models{s: s} }

var _ state.Models = (*Models)(nil)

func (m *Models) key(sessionID string) string { return m.s.opts.Prefix + "models:{" + sessionID + "}" }

func modelField(callID string, which state.ModelState) string {
	return callID + ":" + strconv.Itoa(int(which))
}

// PutModel implements state.Models.
func (m *Models) PutModel(ctx context.Context, sessionID, callID string, which state.ModelState, model *hostv1.ExportedModel) error {
	b, err := proto.Marshal(model)
	if err != nil {
		return fmt.Errorf("encode model: %w", err)
	}
	key := m.key(sessionID)
	_, err = m.s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, modelField(callID, which), b)
		if ttl := m.s.opts.SessionTTL; ttl > 0 {
			// Zero keeps them, as a session without retention is kept.
			p.PExpire(ctx, key, ttl)
		}
		return nil
	})
	return err
}

// Model implements state.Models.
func (m *Models) Model(ctx context.Context, sessionID, callID string, which state.ModelState) (*hostv1.ExportedModel, error) {
	b, err := m.s.rdb.HGet(ctx, m.key(sessionID), modelField(callID, which)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var model hostv1.ExportedModel
	if err := proto.Unmarshal(b, &model); err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	return &model, nil
}

// DeleteModels implements state.Models.
func (m *Models) DeleteModels(ctx context.Context, sessionID string) error {
	return m.s.rdb.Del(ctx, m.key(sessionID)).Err()
}
