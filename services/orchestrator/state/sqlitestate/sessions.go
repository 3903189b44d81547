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

// querier is the pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// alive is the condition of a row that has not expired at $n.
func alive(n int) string { return fmt.Sprintf("(expires = 0 OR expires > $%d)", n) }

// Create stores a new session; an expired one of the same id is replaced.
func (s *Store) Create(ctx context.Context, sess *agentv1.Session) error {
	id := sess.GetSessionId()
	if id == "" {
		return state.Error("create session: empty session id")
	}
	b, err := proto.Marshal(sess)
	if err != nil {
		return fmt.Errorf("encode session %s: %w", id, err)
	}
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM hot_sessions WHERE session_id = $1 AND `+alive(2), id, now).Scan(&n); err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
		if n > 0 {
			return state.Error("create session: session id " + id + " is taken")
		}
		if err := deleteTranscript(ctx, tx, id); err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_sessions (session_id, owner, create_time, body, expires) VALUES ($1, $2, $3, $4, $5)`,
			id, sess.GetOwner(), sess.GetCreateTime().AsTime().UnixNano(), b, s.sessionExpiry(now)); err != nil {
			return fmt.Errorf("create session %s: %w", id, err)
		}
		return nil
	})
}

// getSession reads a live session through q (the pool or a transaction).
func getSession(ctx context.Context, q querier, id string, now int64) (*agentv1.Session, error) {
	var b []byte
	err := q.QueryRowContext(ctx, `SELECT body FROM hot_sessions WHERE session_id = $1 AND `+alive(2), id, now).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	sess := &agentv1.Session{}
	if err := proto.Unmarshal(b, sess); err != nil {
		return nil, fmt.Errorf("decode session %s: %w", id, err)
	}
	return sess, nil
}

// Get returns the session, or ErrNotFound.
func (s *Store) Get(ctx context.Context, sessionID string) (*agentv1.Session, error) {
	return getSession(ctx, s.db, sessionID, s.now())
}

// Update applies fn inside one write transaction; a write renews the
// session's retention.
func (s *Store) Update(ctx context.Context, sessionID string, fn func(*agentv1.Session) error) (*agentv1.Session, error) {
	var out *agentv1.Session
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		sess, err := getSession(ctx, tx, sessionID, now)
		if err != nil {
			return err
		}
		if err := fn(sess); err != nil {
			return err
		}
		b, err := proto.Marshal(sess)
		if err != nil {
			return fmt.Errorf("encode session %s: %w", sessionID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE hot_sessions SET body = $1, owner = $2, expires = $3 WHERE session_id = $4`,
			b, sess.GetOwner(), s.sessionExpiry(now), sessionID); err != nil {
			return fmt.Errorf("update session %s: %w", sessionID, err)
		}
		out = sess
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// List returns the owner's live sessions, newest first.
func (s *Store) List(ctx context.Context, owner string) ([]*agentv1.Session, error) {
	return protoRows(ctx, s.db, func() *agentv1.Session { return &agentv1.Session{} }, "list sessions of "+owner,
		`SELECT body FROM hot_sessions WHERE owner = $1 AND `+alive(2)+` ORDER BY create_time DESC, session_id DESC`, owner, s.now())
}

// Delete removes the session, its transcript, mailbox and decided calls, and
// the event logs, cancel signals, run states and schedule entries of its
// last run and of runIDs, in one transaction.
func (s *Store) Delete(ctx context.Context, sessionID string, runIDs ...string) error {
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		sess, err := getSession(ctx, tx, sessionID, now)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
		if sess.GetLastRunId() != "" {
			runIDs = append(runIDs, sess.GetLastRunId())
		}
		for _, q := range []string{
			`DELETE FROM hot_sessions WHERE session_id = $1`,
			`DELETE FROM hot_transcripts WHERE session_id = $1`,
			`DELETE FROM hot_transcript_heads WHERE session_id = $1`,
			`DELETE FROM hot_mailboxes WHERE session_id = $1`,
			`DELETE FROM hot_decided WHERE session_id = $1`,
		} {
			if _, err := tx.ExecContext(ctx, q, sessionID); err != nil {
				return err
			}
		}
		for _, id := range runIDs {
			for _, q := range []string{
				`DELETE FROM hot_events WHERE run_id = $1`,
				`DELETE FROM hot_event_logs WHERE run_id = $1`,
				`DELETE FROM hot_signals WHERE run_id = $1`,
				`DELETE FROM hot_runs WHERE run_id = $1`,
				`DELETE FROM hot_leases WHERE run_id = $1`,
			} {
				if _, err := tx.ExecContext(ctx, q, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	return nil
}
