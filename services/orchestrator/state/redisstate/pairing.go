package redisstate

// This file keeps host pairings (device codes) and the attempt counter that
// rate-limits guessing them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"nexus.local/services/orchestrator/state"
)

// attemptLua counts an attempt in a window that starts with the first.
const attemptLua = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`

// StartPairing stores a pairing until it expires.
func (h *Hosts) StartPairing(ctx context.Context, p *state.Pairing) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode pairing: %w", err)
	}
	ok, err := h.s.rdb.SetArgs(ctx, h.codeKey(p.UserCode), p.DeviceDigest, redis.SetArgs{Mode: "NX", ExpireAt: p.Expires}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("start pairing: %w", err)
	}
	if ok != "OK" {
		return state.ErrConflict
	}
	if err := h.s.rdb.SetArgs(ctx, h.pairingKey(p.DeviceDigest), b, redis.SetArgs{ExpireAt: p.Expires}).Err(); err != nil {
		return fmt.Errorf("start pairing: %w", err)
	}
	return nil
}

func (h *Hosts) getPairing(ctx context.Context, c redis.Cmdable, digest string) (*state.Pairing, error) {
	b, err := c.Get(ctx, h.pairingKey(digest)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read pairing: %w", err)
	}
	p := &state.Pairing{}
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("decode pairing: %w", err)
	}
	if !time.Now().Before(p.Expires) {
		return nil, state.ErrNotFound
	}
	return p, nil
}

// ApprovePairing approves an open pairing under WATCH/MULTI, so a code is
// approved once.
func (h *Hosts) ApprovePairing(ctx context.Context, userCode string, fn func(*state.Pairing) error) (*state.Pairing, error) {
	digest, err := h.s.rdb.Get(ctx, h.codeKey(userCode)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("approve pairing: %w", err)
	}
	key := h.pairingKey(digest)
	var out *state.Pairing
	err = h.s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		p, err := h.getPairing(ctx, tx, digest)
		if err != nil {
			return err
		}
		if p.HostID != "" {
			return state.ErrNotFound
		}
		if err := fn(p); err != nil {
			return fnError{err}
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode pairing: %w", err)
		}
		if _, err := tx.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			pp.SetArgs(ctx, key, b, redis.SetArgs{KeepTTL: true})
			return nil
		}); err != nil {
			return err
		}
		out = p
		return nil
	}, key)
	var fe fnError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &fe):
		return nil, fe.err
	case errors.Is(err, state.ErrNotFound):
		return nil, state.ErrNotFound
	case errors.Is(err, redis.TxFailedErr):
		// Someone else approved it in between.
		return nil, state.ErrNotFound
	}
	return nil, fmt.Errorf("approve pairing: %w", err)
}

// ClaimPairing returns a pairing; an approved one is removed, and only the
// claimer whose DEL removed it gets it.
func (h *Hosts) ClaimPairing(ctx context.Context, deviceDigest string) (*state.Pairing, error) {
	p, err := h.getPairing(ctx, h.s.rdb, deviceDigest)
	if err != nil {
		return nil, err
	}
	if p.HostID == "" {
		return p, nil
	}
	n, err := h.s.rdb.Del(ctx, h.pairingKey(deviceDigest)).Result()
	if err != nil {
		return nil, fmt.Errorf("claim pairing: %w", err)
	}
	if n == 0 {
		return nil, state.ErrNotFound
	}
	_ = h.s.rdb.Del(ctx, h.codeKey(p.UserCode)).Err()
	return p, nil
}

// Attempts answers the attempts in key's current window: the key expires
// with its window.
func (h *Hosts) Attempts(ctx context.Context, key string) (int, error) {
	n, err := h.s.rdb.Get(ctx, h.attemptKey(key)).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read attempts: %w", err)
	}
	return n, nil
}

// CountAttempt counts an attempt in its window.
func (h *Hosts) CountAttempt(ctx context.Context, key string, window time.Duration) (int, error) {
	n, err := h.attempt.Run(ctx, h.s.rdb, []string{h.attemptKey(key)}, strconv.FormatInt(window.Milliseconds(), 10)).Int()
	if err != nil {
		return 0, fmt.Errorf("count attempt: %w", err)
	}
	return n, nil
}
