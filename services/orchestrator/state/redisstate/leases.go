package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"nexus.local/services/orchestrator/state"
)

// Leases live in two keys of one slot: a hash run -> "owner\nsession" and a
// sorted set run -> expiry (unix milliseconds of the injected clock). The
// scripts keep them in step, and Expired removes what it returns in the
// same script, so exactly one replica reaps each dead run.
const (
	acquireLua = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local owner = string.match(cur, '^([^\n]*)')
  local exp = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
  if owner ~= ARGV[3] and exp and exp > tonumber(ARGV[5]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1
`
	renewLua = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.match(cur, '^([^\n]*)') ~= ARGV[2] then return 0 end
local exp = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if not exp or exp <= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
`
	releaseLua = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.match(cur, '^([^\n]*)') ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`
	expiredLua = `
local runs = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, run in ipairs(runs) do
  local v = redis.call('HGET', KEYS[1], run)
  redis.call('HDEL', KEYS[1], run)
  redis.call('ZREM', KEYS[2], run)
  if v then
    table.insert(out, run)
    table.insert(out, v)
  end
end
return out
`
)

// expiredBatch bounds one Expired call so a mass failure is reaped in steps
// rather than in one long script that blocks Redis.
const expiredBatch = 500

func leaseValue(l state.Lease) string { return l.Owner + "\n" + l.SessionID }

func validLease(l state.Lease, ttl time.Duration) error {
	switch {
	case l.RunID == "" || l.Owner == "":
		return errors.New("lease: run id and owner must not be empty")
	case strings.Contains(l.Owner, "\n"):
		return fmt.Errorf("lease: owner %q must not contain a newline", l.Owner)
	case ttl <= 0:
		return fmt.Errorf("lease: ttl must be positive, got %s", ttl)
	}
	return nil
}

// Acquire takes the run's lease unless another owner holds an unexpired one.
func (s *Store) Acquire(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	now := s.opts.Clock()
	ok, err := s.scripts.acquire.Run(ctx, s.rdb, []string{s.leaseInfoKey(), s.leaseExpiryKey()},
		l.RunID, leaseValue(l), l.Owner, now.Add(ttl).UnixMilli(), now.UnixMilli()).Int()
	if err != nil {
		return fmt.Errorf("acquire lease of %s: %w", l.RunID, err)
	}
	if ok == 0 {
		return state.ErrLeaseLost
	}
	return nil
}

// Renew pushes the lease's expiry out by ttl from now.
func (s *Store) Renew(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	// A lease that already ran out is left for Expired, so the run is
	// failed exactly once rather than revived by a late renewal.
	now := s.opts.Clock()
	ok, err := s.scripts.renew.Run(ctx, s.rdb, []string{s.leaseInfoKey(), s.leaseExpiryKey()},
		l.RunID, l.Owner, now.Add(ttl).UnixMilli(), now.UnixMilli()).Int()
	if err != nil {
		return fmt.Errorf("renew lease of %s: %w", l.RunID, err)
	}
	if ok == 0 {
		return state.ErrLeaseLost
	}
	return nil
}

// Release drops the lease when l.Owner holds it; a lease another owner took
// over is left alone.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	if err := s.scripts.release.Run(ctx, s.rdb, []string{s.leaseInfoKey(), s.leaseExpiryKey()},
		l.RunID, l.Owner).Err(); err != nil {
		return fmt.Errorf("release lease of %s: %w", l.RunID, err)
	}
	return nil
}

// Expired takes the leases whose expiry is at or before now.
func (s *Store) Expired(ctx context.Context, now time.Time) ([]state.Lease, error) {
	vals, err := s.scripts.expired.Run(ctx, s.rdb, []string{s.leaseInfoKey(), s.leaseExpiryKey()},
		now.UnixMilli(), expiredBatch).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("take expired leases: %w", err)
	}
	out := make([]state.Lease, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		owner, session, _ := strings.Cut(vals[i+1], "\n")
		out = append(out, state.Lease{RunID: vals[i], SessionID: session, Owner: owner})
	}
	return out, nil
}
