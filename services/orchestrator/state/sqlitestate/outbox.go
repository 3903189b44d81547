package sqlitestate

// This file holds the outbox of outcome records.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// DecideRecord decides callID and puts rec in one transaction.
func (s *Store) DecideRecord(ctx context.Context, sessionID, callID string, rec state.OutboxRecord) (state.Delivery, bool, error) {
	var d state.Delivery
	var got bool
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		var err error
		if d, got, err = s.decideTx(ctx, tx, sessionID, callID, now); err != nil {
			return err
		}
		rec.SessionID, rec.Delivery = sessionID, nil
		if got {
			rec.Delivery = d.Content
		}
		return putRecord(ctx, tx, rec)
	})
	if err != nil {
		return state.Delivery{}, false, fmt.Errorf("decide tool call %s of %s: %w", callID, sessionID, err)
	}
	return d, got, nil
}

func putRecord(ctx context.Context, tx *sql.Tx, r state.OutboxRecord) error {
	var res []byte
	if r.Delivery != nil {
		b, err := proto.Marshal(r.Delivery)
		if err != nil {
			return fmt.Errorf("encode outbox record %s: %w", r.ID, err)
		}
		res = b
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO hot_outbox (session_id, id, body, result) VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, id) DO NOTHING`,
		r.SessionID, r.ID, r.Body, res); err != nil {
		return fmt.Errorf("put outbox record %s: %w", r.ID, err)
	}
	return nil
}

// PutOutbox adds records in one transaction.
func (s *Store) PutOutbox(ctx context.Context, recs ...state.OutboxRecord) error {
	return s.write(ctx, func(tx *sql.Tx, _ int64) error {
		for _, r := range recs {
			if err := putRecord(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Outboxed returns up to limit records, oldest first.
func (s *Store) Outboxed(ctx context.Context, sessionID string, limit int) ([]state.OutboxRecord, error) {
	q := `SELECT session_id, id, body, result FROM hot_outbox WHERE $1 = '' OR session_id = $1 ORDER BY seq LIMIT $2`
	rows, err := s.db.QueryContext(ctx, q, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	defer rows.Close()
	var out []state.OutboxRecord
	for rows.Next() {
		var r state.OutboxRecord
		var res []byte
		if err := rows.Scan(&r.SessionID, &r.ID, &r.Body, &res); err != nil {
			return nil, fmt.Errorf("read the outbox: %w", err)
		}
		if res != nil {
			r.Delivery = &orchestratorv1.MailboxDelivery{}
			if err := proto.Unmarshal(res, r.Delivery); err != nil {
				return nil, fmt.Errorf("decode outbox record %s: %w", r.ID, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	return out, nil
}

// DoneOutbox removes the session's records ids.
func (s *Store) DoneOutbox(ctx context.Context, sessionID string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{sessionID}
	marks := make([]string, len(ids))
	for i, id := range ids {
		args = append(args, id)
		marks[i] = fmt.Sprintf("$%d", i+2)
	}
	return s.write(ctx, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_outbox WHERE session_id = $1 AND id IN (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			return fmt.Errorf("remove outbox records of %s: %w", sessionID, err)
		}
		return nil
	})
}
