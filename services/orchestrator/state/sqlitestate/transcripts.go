package sqlitestate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"

	"google.golang.org/protobuf/proto"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// liveTranscript selects cols of the messages of session $1 while its
// transcript's expiry (the one expires, in its head row) is after $2.
func liveTranscript(cols string) string {
	return `SELECT ` + cols + ` FROM hot_transcripts t JOIN hot_transcript_heads h ON h.session_id = t.session_id
		WHERE t.session_id = $1 AND ` + alive(2)
}

// Transcript returns the session's transcript, or ErrNotFound when the
// session is gone.
func (s *Store) Transcript(ctx context.Context, sessionID string) ([]*modelv1.Message, error) {
	now := s.now()
	if _, err := getSession(ctx, s.db, sessionID, now); err != nil {
		return nil, err
	}
	return protoRows(ctx, s.db, func() *modelv1.Message { return &modelv1.Message{} }, "read transcript of "+sessionID,
		liveTranscript("t.body")+` ORDER BY t.idx`, sessionID, now)
}

// SaveTranscript replaces the transcript in one transaction, so a reader
// sees the old or the new one, never a mix. It writes only the messages
// that are new or changed: a transcript grows by a turn at a time and its
// older messages (a script's output, its views) can be megabytes, which a
// rewrite of the whole would copy again after every turn.
func (s *Store) SaveTranscript(ctx context.Context, sessionID string, msgs []*modelv1.Message) error {
	enc := make([][]byte, len(msgs))
	sums := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode transcript of %s, message %d: %w", sessionID, i, err)
		}
		sum := sha256.Sum256(b)
		enc[i], sums[i] = b, sum[:]
	}
	return s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := getSession(ctx, tx, sessionID, now); err != nil {
			return err
		}
		stored, err := storedDigests(ctx, tx, sessionID, now)
		if err != nil {
			return fmt.Errorf("save transcript of %s: %w", sessionID, err)
		}
		for i, b := range enc {
			if bytes.Equal(stored[i], sums[i]) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_transcripts (session_id, idx, digest, body) VALUES ($1, $2, $3, $4)`,
				sessionID, i, sums[i], b); err != nil {
				return fmt.Errorf("save transcript of %s: %w", sessionID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_transcripts WHERE session_id = $1 AND idx >= $2`, sessionID, len(enc)); err != nil {
			return fmt.Errorf("save transcript of %s: %w", sessionID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_transcript_heads (session_id, expires) VALUES ($1, $2)`,
			sessionID, s.sessionExpiry(now)); err != nil {
			return fmt.Errorf("save transcript of %s: %w", sessionID, err)
		}
		return nil
	})
}

// storedDigests answers the digest of each stored message of a live
// transcript by its index; an expired transcript (not yet pruned) has none,
// so every message is written again.
func storedDigests(ctx context.Context, tx *sql.Tx, sessionID string, now int64) (map[int][]byte, error) {
	rows, err := tx.QueryContext(ctx, liveTranscript("t.idx, t.digest"), sessionID, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int][]byte{}
	for rows.Next() {
		var idx int
		var sum []byte
		if err := rows.Scan(&idx, &sum); err != nil {
			return nil, err
		}
		out[idx] = sum
	}
	return out, rows.Err()
}

// deleteTranscript removes a session's transcript.
func deleteTranscript(ctx context.Context, tx *sql.Tx, sessionID string) error {
	for _, q := range []string{
		`DELETE FROM hot_transcripts WHERE session_id = $1`,
		`DELETE FROM hot_transcript_heads WHERE session_id = $1`,
	} {
		if _, err := tx.ExecContext(ctx, q, sessionID); err != nil {
			return err
		}
	}
	return nil
}
