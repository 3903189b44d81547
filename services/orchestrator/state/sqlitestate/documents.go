package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Documents is state.Documents in the store's SQLite file: one row per
// session, kept as long as the session's hot state.
type Documents struct{ s *Store }

// NewDocuments returns the documents kept in s's file.
func NewDocuments(s *Store) *Documents { return &Documents{s: s} }

var _ state.Documents = (*Documents)(nil)

// PutDocument implements state.Documents.
func (d *Documents) PutDocument(ctx context.Context, doc *agentv1.SessionDocument) error {
	b, err := proto.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode document: %w", err)
	}
	return d.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_documents (session_id, body, expires) VALUES ($1, $2, $3)`,
			doc.GetSessionId(), b, d.s.sessionExpiry(now)); err != nil {
			return fmt.Errorf("store the document of session %s: %w", doc.GetSessionId(), err)
		}
		return nil
	})
}

// Document implements state.Documents.
func (d *Documents) Document(ctx context.Context, sessionID string) (*agentv1.SessionDocument, error) {
	var b []byte
	err := d.s.db.QueryRowContext(ctx, `SELECT body FROM hot_documents WHERE session_id = $1 AND `+alive(2), sessionID, d.s.now()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read the document of session %s: %w", sessionID, err)
	}
	doc := &agentv1.SessionDocument{}
	if err := proto.Unmarshal(b, doc); err != nil {
		return nil, fmt.Errorf("decode the document of session %s: %w", sessionID, err)
	}
	return doc, nil
}

// DeleteDocument implements state.Documents.
func (d *Documents) DeleteDocument(ctx context.Context, sessionID string) error {
	return d.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_documents WHERE session_id = $1`, sessionID); err != nil {
			return fmt.Errorf("delete the document of session %s: %w", sessionID, err)
		}
		return nil
	})
}
