package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// Models is state.Models in the store's SQLite file: a row per session,
// call and state, kept as long as the session's hot state.
type Models struct{ s *Store }

// NewModels returns the review models kept in s's file.
func NewModels(s *Store) *Models { return &Models{s: s} }

var _ state.Models = (*Models)(nil)

// PutModel implements state.Models.
func (m *Models) PutModel(ctx context.Context, sessionID, callID string, which state.ModelState, model *hostv1.ExportedModel) error {
	b, err := proto.Marshal(model)
	if err != nil {
		return fmt.Errorf("encode model: %w", err)
	}
	return m.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_models (session_id, call_id, state, body, expires) VALUES ($1, $2, $3, $4, $5)`,
			sessionID, callID, int(which), b, m.s.sessionExpiry(now)); err != nil {
			return fmt.Errorf("store the model of call %s: %w", callID, err)
		}
		return nil
	})
}

// Model implements state.Models.
func (m *Models) Model(ctx context.Context, sessionID, callID string, which state.ModelState) (*hostv1.ExportedModel, error) {
	var b []byte
	err := m.s.db.QueryRowContext(ctx, `SELECT body FROM hot_models WHERE session_id = $1 AND call_id = $2 AND state = $3 AND `+alive(4),
		sessionID, callID, int(which), m.s.now()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read the model of call %s: %w", callID, err)
	}
	model := &hostv1.ExportedModel{}
	if err := proto.Unmarshal(b, model); err != nil {
		return nil, fmt.Errorf("decode the model of call %s: %w", callID, err)
	}
	return model, nil
}

// DeleteModels implements state.Models.
func (m *Models) DeleteModels(ctx context.Context, sessionID string) error {
	return m.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_models WHERE session_id = $1`, sessionID); err != nil {
			return fmt.Errorf("delete the models of session %s: %w", sessionID, err)
		}
		return nil
	})
}
