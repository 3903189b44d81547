package sqlitestate

// This file keeps pairings in progress and the attempts counted against them.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"nexus.local/services/orchestrator/state"
)

// StartPairing stores a pairing until it expires.
func (h *Hosts) StartPairing(ctx context.Context, p *state.Pairing) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode pairing: %w", err)
	}
	return h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_pairings WHERE expires <= $1`, now); err != nil {
			return fmt.Errorf("start pairing: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM hot_pairings WHERE user_code = $1`, p.UserCode).Scan(&n); err != nil {
			return fmt.Errorf("start pairing: %w", err)
		}
		if n > 0 {
			return state.ErrConflict
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_pairings (device_digest, user_code, body, expires) VALUES ($1, $2, $3, $4)`,
			p.DeviceDigest, p.UserCode, string(b), p.Expires.UnixNano()); err != nil {
			return fmt.Errorf("start pairing: %w", err)
		}
		return nil
	})
}

// pairingBy reads the unexpired pairing where column = value.
func pairingBy(ctx context.Context, tx *sql.Tx, column, value string, now int64) (*state.Pairing, error) {
	var body string
	err := tx.QueryRowContext(ctx, `SELECT body FROM hot_pairings WHERE `+column+` = $1 AND expires > $2`, value, now).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read pairing: %w", err)
	}
	p := &state.Pairing{}
	if err := json.Unmarshal([]byte(body), p); err != nil {
		return nil, fmt.Errorf("decode pairing: %w", err)
	}
	return p, nil
}

// ApprovePairing approves an open pairing.
func (h *Hosts) ApprovePairing(ctx context.Context, userCode string, fn func(*state.Pairing) error) (*state.Pairing, error) {
	var out *state.Pairing
	err := h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		p, err := pairingBy(ctx, tx, "user_code", userCode, now)
		if err != nil {
			return err
		}
		if p.HostID != "" {
			return state.ErrNotFound
		}
		if err := fn(p); err != nil {
			return err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode pairing: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE hot_pairings SET body = $2 WHERE device_digest = $1`, p.DeviceDigest, string(b)); err != nil {
			return fmt.Errorf("approve pairing: %w", err)
		}
		out = p
		return nil
	})
	return out, err
}

// ClaimPairing returns a pairing, removing an approved one.
func (h *Hosts) ClaimPairing(ctx context.Context, deviceDigest string) (*state.Pairing, error) {
	var out *state.Pairing
	err := h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		p, err := pairingBy(ctx, tx, "device_digest", deviceDigest, now)
		if err != nil {
			return err
		}
		if p.HostID != "" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM hot_pairings WHERE device_digest = $1`, deviceDigest); err != nil {
				return fmt.Errorf("claim pairing: %w", err)
			}
		}
		out = p
		return nil
	})
	return out, err
}

// Attempts answers the attempts in key's current window.
func (h *Hosts) Attempts(ctx context.Context, key string) (int, error) {
	var n int
	err := h.s.db.QueryRowContext(ctx, `SELECT n FROM hot_attempts WHERE attempt_key = $1 AND expires > $2`, key, h.s.now()).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read attempts: %w", err)
	}
	return n, nil
}

// CountAttempt counts an attempt in its window.
func (h *Hosts) CountAttempt(ctx context.Context, key string, window time.Duration) (int, error) {
	var n int
	err := h.s.write(ctx, func(tx *sql.Tx, now int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_attempts WHERE attempt_key = $1 AND expires <= $2`, key, now); err != nil {
			return fmt.Errorf("count attempt: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO hot_attempts (attempt_key, n, expires) VALUES ($1, 1, $2)
			ON CONFLICT (attempt_key) DO UPDATE SET n = n + 1 RETURNING n`, key, now+window.Nanoseconds()).Scan(&n); err != nil {
			return fmt.Errorf("count attempt: %w", err)
		}
		return nil
	})
	return n, err
}
