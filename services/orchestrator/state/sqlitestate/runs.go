package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// SaveRun stores the run's state, replacing the last one.
func (s *Store) SaveRun(ctx context.Context, r *orchestratorv1.RunState) error {
	if r.GetRunId() == "" {
		return state.Error("save run: empty run id")
	}
	b, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.GetRunId(), err)
	}
	return s.write(ctx, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_runs (run_id, body) VALUES ($1, $2)`, r.GetRunId(), b); err != nil {
			return fmt.Errorf("save run %s: %w", r.GetRunId(), err)
		}
		return nil
	})
}

// GetRun returns the run's last saved state, or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, runID string) (*orchestratorv1.RunState, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT body FROM hot_runs WHERE run_id = $1`, runID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
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
