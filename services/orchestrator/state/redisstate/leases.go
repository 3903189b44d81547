package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"nexus.local/services/orchestrator/state"
)

// The schedule lives in two keys of one slot: a hash run -> "owner\nsession"
// (owner empty while the run is suspended) and a sorted set run -> due time
// in unix milliseconds of the Redis server's own clock (TIME), so replicas
// whose clocks disagree still agree on when a lease ran out.
const luaNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function owner(v) return string.match(v, '^([^\n]*)') end
`

const (
	// ARGV: run, value, owner, ttl ms.
	acquireLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and owner(cur) ~= ARGV[3] then
  local due = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
  if due and due > now then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
return 1
`
	// ARGV: run, owner, ttl ms.
	renewLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or owner(cur) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
`
	// ARGV: run, owner, session, wait ms.
	suspendLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or owner(cur) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '\n' .. ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
return 1
`
	// ARGV: run.
	wakeLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or owner(cur) ~= '' then return 0 end
local due = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if due and due > now then redis.call('ZADD', KEYS[2], now, ARGV[1]) end
return 1
`
	// ARGV: run, owner, ttl ms.
	claimLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local due = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if due and due > now then return 0 end
local session = string.match(cur, '\n(.*)$') or ''
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '\n' .. session)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
`
	// wakeClaimLua is wakeLua and then claimLua in one step. ARGV: run,
	// owner, ttl ms.
	wakeClaimLua = luaNow + `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local due = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if owner(cur) == '' then due = math.min(due or now, now) end
if due and due > now then return 0 end
local session = string.match(cur, '\n(.*)$') or ''
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '\n' .. session)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
`
	// ARGV: run, owner.
	releaseLua = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.match(cur, '^([^\n]*)') ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`
	// ARGV: limit.
	dueLua = luaNow + `
local runs = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, run in ipairs(runs) do
  local v = redis.call('HGET', KEYS[1], run)
  if v then
    table.insert(out, run)
    table.insert(out, v)
  else
    redis.call('ZREM', KEYS[2], run)
  end
end
return out
`
)

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

func (s *Store) leaseKeys() []string { return []string{s.leaseInfoKey(), s.leaseExpiryKey()} }

// Acquire records a new run owned by l.Owner.
func (s *Store) Acquire(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	ok, err := s.scripts.acquire.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, leaseValue(l), l.Owner, ttl.Milliseconds()).Int()
	return leaseResult("acquire", l.RunID, ok, err)
}

// Renew pushes the lease's expiry out by ttl from now.
func (s *Store) Renew(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	ok, err := s.scripts.renew.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, l.Owner, ttl.Milliseconds()).Int()
	return leaseResult("renew", l.RunID, ok, err)
}

// Suspend leaves the run without an owner, due after wait.
func (s *Store) Suspend(ctx context.Context, l state.Lease, wait time.Duration) error {
	if err := validLease(l, max(wait, time.Millisecond)); err != nil {
		return err
	}
	ok, err := s.scripts.suspend.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, l.Owner, l.SessionID, max(wait, 0).Milliseconds()).Int()
	return leaseResult("suspend", l.RunID, ok, err)
}

// Wake makes a suspended run due now.
func (s *Store) Wake(ctx context.Context, runID string) error {
	if err := s.scripts.wake.Run(ctx, s.rdb, s.leaseKeys(), runID).Err(); err != nil {
		return fmt.Errorf("wake run %s: %w", runID, err)
	}
	return nil
}

// Claim takes a due run for l.Owner.
func (s *Store) Claim(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	ok, err := s.scripts.claim.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, l.Owner, ttl.Milliseconds()).Int()
	return leaseResult("claim", l.RunID, ok, err)
}

// WakeClaim wakes the run and claims it for l.Owner in one script.
func (s *Store) WakeClaim(ctx context.Context, l state.Lease, ttl time.Duration) error {
	if err := validLease(l, ttl); err != nil {
		return err
	}
	ok, err := s.scripts.wakeClaim.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, l.Owner, ttl.Milliseconds()).Int()
	return leaseResult("wake and claim", l.RunID, ok, err)
}

// Release forgets the run when l.Owner holds it; a run another owner took
// over is left alone.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	if err := s.scripts.release.Run(ctx, s.rdb, s.leaseKeys(), l.RunID, l.Owner).Err(); err != nil {
		return fmt.Errorf("release lease of %s: %w", l.RunID, err)
	}
	return nil
}

// Due returns up to limit runs whose due time has passed.
func (s *Store) Due(ctx context.Context, limit int) ([]state.Lease, error) {
	vals, err := s.scripts.due.Run(ctx, s.rdb, s.leaseKeys(), limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("read due runs: %w", err)
	}
	out := make([]state.Lease, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		owner, session, _ := strings.Cut(vals[i+1], "\n")
		out = append(out, state.Lease{RunID: vals[i], SessionID: session, Owner: owner})
	}
	return out, nil
}

func leaseResult(what, runID string, ok int, err error) error {
	if err != nil {
		return fmt.Errorf("%s lease of %s: %w", what, runID, err)
	}
	if ok == 0 {
		return state.ErrLeaseLost
	}
	return nil
}
