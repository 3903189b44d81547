package sqlitestate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// digestNone is the decided digest of a call closed without a result.
const digestNone = "none"

// mailboxRow is a session's open mailbox.
type mailboxRow struct {
	callID, token string
	result        []byte
	trace         sql.NullString
	digest        sql.NullString
	decided       bool
}

// openMailbox reads the session's mailbox if it is open (not expired).
func openMailbox(ctx context.Context, tx querier, sessionID string, now int64) (mailboxRow, bool, error) {
	var m mailboxRow
	err := tx.QueryRowContext(ctx, `SELECT call_id, token, result, trace, digest, decided FROM hot_mailboxes WHERE session_id = $1 AND expires > $2`, sessionID, now).
		Scan(&m.callID, &m.token, &m.result, &m.trace, &m.digest, &m.decided)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read the mailbox of %s: %w", sessionID, err)
	}
	return m, true, nil
}

// delivery decodes the stored result of m.
func (m mailboxRow) delivery() (state.Delivery, error) {
	d := state.Delivery{ToolCallID: m.callID, Content: &orchestratorv1.MailboxDelivery{}}
	if err := proto.Unmarshal(m.result, d.Content); err != nil {
		return d, fmt.Errorf("decode the result of %s: %w", m.callID, err)
	}
	if m.trace.Valid && m.trace.String != "" {
		if err := json.Unmarshal([]byte(m.trace.String), &d.Trace); err != nil {
			return d, fmt.Errorf("decode the trace of %s: %w", m.callID, err)
		}
	}
	return d, nil
}

// Expect opens the session's mailbox for one tool call, replacing any
// earlier one.
func (s *Store) Expect(ctx context.Context, sessionID, callID, token string, ttl time.Duration) error {
	if callID == "" || token == "" {
		return errors.New("expect tool result: call id and token must not be empty")
	}
	if ttl <= 0 {
		return fmt.Errorf("expect tool result: ttl must be positive, got %s", ttl)
	}
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_mailboxes (session_id, call_id, token, expires, decided) VALUES ($1, $2, $3, $4, 0)`,
			sessionID, callID, token, now+ttl.Nanoseconds()); err != nil {
			return fmt.Errorf("open mailbox of %s: %w", sessionID, err)
		}
		return nil
	})
}

// Deliver checks the call, the token and what was decided, and stores the
// result, all in one transaction.
func (s *Store) Deliver(ctx context.Context, sessionID, callID, token string, d state.Delivery) error {
	digest, err := state.ResultDigest(token, d.Content)
	if err != nil {
		return err
	}
	b, err := proto.Marshal(d.Content)
	if err != nil {
		return fmt.Errorf("encode tool result: %w", err)
	}
	trace, err := json.Marshal(d.Trace)
	if err != nil {
		return fmt.Errorf("encode trace: %w", err)
	}
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		m, ok, err := openMailbox(ctx, tx, sessionID, now)
		if err != nil {
			return err
		}
		if !ok || m.callID != callID {
			return checkDecided(ctx, tx, sessionID, callID, token, digest, now)
		}
		switch {
		case m.token != token:
			return state.ErrBadToken
		case m.digest.Valid && m.digest.String == digest:
			return nil
		case m.digest.Valid, m.decided:
			return state.ErrConflict
		}
		if _, err := tx.ExecContext(ctx, `UPDATE hot_mailboxes SET result = $1, trace = $2, digest = $3 WHERE session_id = $4`,
			b, string(trace), digest, sessionID); err != nil {
			return fmt.Errorf("store the result of %s: %w", callID, err)
		}
		return nil
	})
}

// checkDecided answers a result for a call that is no longer open: the same
// one it was decided with is accepted again, anything else refused.
func checkDecided(ctx context.Context, tx *sql.Tx, sessionID, callID, token, digest string, now int64) error {
	var decToken, decDigest string
	err := tx.QueryRowContext(ctx, `SELECT token, digest FROM hot_decided WHERE session_id = $1 AND call_id = $2 AND expires > $3`, sessionID, callID, now).
		Scan(&decToken, &decDigest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return state.ErrNoPendingCall
	case err != nil:
		return fmt.Errorf("read how %s was decided: %w", callID, err)
	case decToken != token:
		return state.ErrBadToken
	case decDigest != digest:
		return state.ErrConflict
	}
	return nil
}

// Peek returns the result for callID if it was delivered.
func (s *Store) Peek(ctx context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	m, ok, err := openMailbox(ctx, s.db, sessionID, s.now())
	if err != nil || !ok || m.callID != callID || !m.digest.Valid {
		return state.Delivery{}, false, err
	}
	d, err := m.delivery()
	return d, err == nil, err
}

// Decide closes callID with its result, or with none.
func (s *Store) Decide(ctx context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	var d state.Delivery
	var got bool
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		var err error
		d, got, err = s.decideTx(ctx, tx, sessionID, callID, now)
		return err
	})
	if err != nil {
		return state.Delivery{}, false, err
	}
	return d, got, nil
}

// decideTx decides callID within tx.
func (s *Store) decideTx(ctx context.Context, tx *sql.Tx, sessionID, callID string, now int64) (state.Delivery, bool, error) {
	var d state.Delivery
	var got bool
	err := func() error {
		m, ok, err := openMailbox(ctx, tx, sessionID, now)
		if err != nil || !ok || m.callID != callID {
			return err
		}
		digest := digestNone
		if m.digest.Valid {
			digest = m.digest.String
		}
		if _, err := tx.ExecContext(ctx, `UPDATE hot_mailboxes SET decided = 1 WHERE session_id = $1`, sessionID); err != nil {
			return fmt.Errorf("decide %s: %w", callID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_decided (session_id, call_id, token, digest, expires) VALUES ($1, $2, $3, $4, $5)`,
			sessionID, callID, m.token, digest, s.decidedExpiry(now)); err != nil {
			return fmt.Errorf("decide %s: %w", callID, err)
		}
		if !m.digest.Valid {
			return nil
		}
		d, err = m.delivery()
		got = err == nil
		return err
	}()
	if err != nil {
		return state.Delivery{}, false, err
	}
	return d, got, nil
}
