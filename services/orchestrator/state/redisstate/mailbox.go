package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// The mailbox is one hash per session: call and token name the pending tool
// call; result, trace and digest appear when its result is accepted; decided
// when the run closed the call. Each session's decided calls are remembered
// in a second hash (call -> token and digest, or "none"), in the same slot.
const (
	fieldCall    = "call"
	fieldToken   = "token"
	fieldResult  = "result"
	fieldTrace   = "trace"
	fieldDigest  = "digest"
	fieldDecided = "decided"
)

// decidedTTL is how long a session remembers how its calls were decided, so
// a courier that retries late is still answered the same.
const decidedTTL = 24 * time.Hour

// deliverLua checks and stores in one atomic step. KEYS: mailbox, decided.
// ARGV: call, token, result, trace, digest.
const deliverLua = `
local call = redis.call('HGET', KEYS[1], 'call')
if call == ARGV[1] then
  if redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then return 'badtoken' end
  local d = redis.call('HGET', KEYS[1], 'digest')
  if d then
    if d == ARGV[5] then return 'same' end
    return 'conflict'
  end
  if redis.call('HEXISTS', KEYS[1], 'decided') == 1 then return 'conflict' end
  redis.call('HSET', KEYS[1], 'result', ARGV[3], 'trace', ARGV[4], 'digest', ARGV[5])
  return 'ok'
end
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return 'nopending' end
local token, digest = string.match(v, '^([^\n]*)\n(.*)$')
if token ~= ARGV[2] then return 'badtoken' end
if digest == ARGV[5] then return 'same' end
return 'conflict'
`

// decideLua closes the call and returns its result, if any. KEYS: mailbox,
// decided. ARGV: call, decided ttl in ms.
const decideLua = `
if redis.call('HGET', KEYS[1], 'call') ~= ARGV[1] then return {'gone'} end
redis.call('HSET', KEYS[1], 'decided', '1')
local v = redis.call('HMGET', KEYS[1], 'token', 'digest', 'result', 'trace')
redis.call('HSET', KEYS[2], ARGV[1], v[1] .. '\n' .. (v[2] or 'none'))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if not v[3] then return {'none'} end
return {'ok', v[3], v[4] or ''}
`

// decidedTTL is how long decided calls are remembered: a day, or less when
// the session itself is kept for less.
func (s *Store) decidedTTL() time.Duration {
	if s.opts.SessionTTL > 0 {
		return min(decidedTTL, s.opts.SessionTTL)
	}
	return decidedTTL
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
	key := s.mailboxKey(sessionID)
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, fieldCall, callID, fieldToken, token)
		p.PExpire(ctx, key, ttl)
		return nil
	}); err != nil {
		return fmt.Errorf("open mailbox of %s: %w", sessionID, err)
	}
	return nil
}

// Deliver accepts the result exactly once across replicas; the identical
// result again is accepted again.
func (s *Store) Deliver(ctx context.Context, sessionID, callID, token string, d state.Delivery) error {
	result, err := proto.Marshal(d.Content)
	if err != nil {
		return fmt.Errorf("encode tool result: %w", err)
	}
	digest, err := state.ResultDigest(token, d.Content)
	if err != nil {
		return err
	}
	trace, err := json.Marshal(d.Trace)
	if err != nil {
		return fmt.Errorf("encode trace context: %w", err)
	}
	res, err := s.scripts.deliver.Run(ctx, s.rdb,
		[]string{s.mailboxKey(sessionID), s.decidedKey(sessionID)},
		callID, token, result, trace, digest,
	).Text()
	if err != nil {
		return fmt.Errorf("deliver tool result to %s: %w", sessionID, err)
	}
	switch res {
	case "ok", "same":
		return nil
	case "nopending":
		return state.ErrNoPendingCall
	case "badtoken":
		return state.ErrBadToken
	case "conflict":
		return state.ErrConflict
	default:
		return fmt.Errorf("deliver tool result to %s: unexpected script reply %q", sessionID, res)
	}
}

// Peek reads the mailbox; ok is true when the result for callID is there.
func (s *Store) Peek(ctx context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	return peeked(sessionID, callID, s.readMailbox(ctx, s.rdb, sessionID))
}

func (s *Store) readMailbox(ctx context.Context, c redis.Cmdable, sessionID string) *redis.SliceCmd {
	return c.HMGet(ctx, s.mailboxKey(sessionID), fieldCall, fieldResult, fieldTrace)
}

// peeked reads the answer of readMailbox for callID.
func peeked(sessionID, callID string, cmd *redis.SliceCmd) (state.Delivery, bool, error) {
	vals, err := cmd.Result()
	if err != nil {
		return state.Delivery{}, false, fmt.Errorf("read mailbox of %s: %w", sessionID, err)
	}
	call, _ := vals[0].(string)
	raw, hasResult := vals[1].(string)
	if call != callID || !hasResult {
		return state.Delivery{}, false, nil
	}
	trace, _ := vals[2].(string)
	d, err := decodeDelivery(callID, raw, trace)
	return d, err == nil, err
}

// Decide closes the call and returns its result, if one was delivered.
func (s *Store) Decide(ctx context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	vals, err := s.scripts.decide.Run(ctx, s.rdb,
		[]string{s.mailboxKey(sessionID), s.decidedKey(sessionID)},
		callID, s.decidedTTL().Milliseconds(),
	).Slice()
	if err != nil {
		return state.Delivery{}, false, fmt.Errorf("decide tool call %s of %s: %w", callID, sessionID, err)
	}
	return decided(callID, vals)
}

func decodeDelivery(callID, raw, trace string) (state.Delivery, error) {
	d := state.Delivery{ToolCallID: callID, Content: &orchestratorv1.MailboxDelivery{}}
	if err := proto.Unmarshal([]byte(raw), d.Content); err != nil {
		return state.Delivery{}, fmt.Errorf("decode tool result of %s: %w", callID, err)
	}
	if trace != "" && trace != "null" {
		if err := json.Unmarshal([]byte(trace), &d.Trace); err != nil {
			return state.Delivery{}, fmt.Errorf("decode trace context of %s: %w", callID, err)
		}
	}
	return d, nil
}

// retry paces re-checks while Redis is unreachable, with jitter so that
// thousands of waiters do not all come back in the same millisecond.
type retry struct{ d time.Duration }

func newRetry() *retry { return &retry{d: 100 * time.Millisecond} }

func (r *retry) next() <-chan time.Time {
	d := r.d/2 + rand.N(r.d)
	r.d = min(2*r.d, 5*time.Second)
	return time.After(d)
}

func (r *retry) reset() { r.d = 100 * time.Millisecond }

// decided reads the answer of a decide script: the delivery it decided
// with, or false when the script decided nothing.
func decided(callID string, vals []any) (state.Delivery, bool, error) {
	if len(vals) < 3 || vals[0] != "ok" {
		return state.Delivery{}, false, nil
	}
	raw, _ := vals[1].(string)
	trace, _ := vals[2].(string)
	d, err := decodeDelivery(callID, raw, trace)
	return d, err == nil, err
}
