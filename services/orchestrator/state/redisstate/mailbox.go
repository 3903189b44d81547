package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// The mailbox is one hash per session: call and token name the pending tool
// call, result and trace appear when its result is accepted.
const (
	fieldCall   = "call"
	fieldToken  = "token"
	fieldResult = "result"
	fieldTrace  = "trace"
)

// deliverLua checks and stores in one atomic step, then publishes: a
// waiter that subscribed before the PUBLISH is woken, and one that checks
// the mailbox after it finds the result, because the result is stored first.
const deliverLua = `
local call = redis.call('HGET', KEYS[1], 'call')
if not call or call ~= ARGV[1] then return 'nopending' end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then return 'badtoken' end
if redis.call('HEXISTS', KEYS[1], 'result') == 1 then return 'already' end
redis.call('HSET', KEYS[1], 'result', ARGV[3], 'trace', ARGV[4])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 'ok'
`

// notification is the pub/sub payload of a delivery. Waiters re-read the
// mailbox rather than trusting it; it carries the trace context so the hop
// through Redis is visible to whoever inspects the channel.
type notification struct {
	ToolCallID string            `json:"tool_call_id"`
	Trace      map[string]string `json:"trace,omitempty"`
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

// Deliver accepts the result exactly once across replicas.
func (s *Store) Deliver(ctx context.Context, sessionID, callID, token string, d state.Delivery) error {
	result, err := proto.Marshal(d.Result)
	if err != nil {
		return fmt.Errorf("encode tool result: %w", err)
	}
	trace, err := json.Marshal(d.Trace)
	if err != nil {
		return fmt.Errorf("encode trace context: %w", err)
	}
	note, err := json.Marshal(notification{ToolCallID: callID, Trace: d.Trace})
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	res, err := s.scripts.deliver.Run(ctx, s.rdb,
		[]string{s.mailboxKey(sessionID)},
		callID, token, result, trace, mailboxChannel(s.opts.Prefix, sessionID), note,
	).Text()
	if err != nil {
		return fmt.Errorf("deliver tool result to %s: %w", sessionID, err)
	}
	switch res {
	case "ok":
		return nil
	case "nopending":
		return state.ErrNoPendingCall
	case "badtoken":
		return state.ErrBadToken
	case "already":
		return state.ErrAlreadyDelivered
	default:
		return fmt.Errorf("deliver tool result to %s: unexpected script reply %q", sessionID, res)
	}
}

// Wait registers with the shared subscriber first, then looks in the
// mailbox, then sleeps until kicked: a result stored before the
// registration is found by the look, one stored after it is announced.
// Like the in-process store, it refuses at once (ErrNoPendingCall) when the
// mailbox is not open for callID.
func (s *Store) Wait(ctx context.Context, sessionID, callID string) (state.Delivery, error) {
	w := newWaiter()
	unwatch := s.sub.watch(mailboxChannel(s.opts.Prefix, sessionID), w)
	defer unwatch()
	d, ok, call, err := s.peek(ctx, sessionID, callID)
	switch {
	case err != nil:
		return state.Delivery{}, err
	case ok:
		return d, nil
	case call != callID:
		return state.Delivery{}, state.ErrNoPendingCall
	}
	retry := newRetry()
	for {
		d, ok, _, err := s.peek(ctx, sessionID, callID)
		switch {
		case ok:
			return d, nil
		case err != nil && !isRedisDown(err):
			return state.Delivery{}, err
		}
		var timer <-chan time.Time
		if err != nil {
			// Redis is unreachable: the reconnect will kick us, and the
			// timer covers a look that failed after the reconnect.
			timer = retry.next()
		} else {
			retry.reset()
		}
		select {
		case <-ctx.Done():
			return state.Delivery{}, ctx.Err()
		case <-w.kick:
		case <-timer:
		}
	}
}

// peek reads the mailbox; ok is true when the result for callID is there,
// call is the call the mailbox is open for ("" when it is closed).
func (s *Store) peek(ctx context.Context, sessionID, callID string) (d state.Delivery, ok bool, call string, err error) {
	vals, err := s.rdb.HMGet(ctx, s.mailboxKey(sessionID), fieldCall, fieldResult, fieldTrace).Result()
	if err != nil {
		return state.Delivery{}, false, "", fmt.Errorf("read mailbox of %s: %w", sessionID, err)
	}
	call, _ = vals[0].(string)
	raw, hasResult := vals[1].(string)
	if call != callID || !hasResult {
		return state.Delivery{}, false, call, nil
	}
	d = state.Delivery{ToolCallID: callID, Result: &hostv1.HostResult{}}
	if err := proto.Unmarshal([]byte(raw), d.Result); err != nil {
		return state.Delivery{}, false, call, fmt.Errorf("decode tool result of %s: %w", sessionID, err)
	}
	if t, _ := vals[2].(string); t != "" && t != "null" {
		if err := json.Unmarshal([]byte(t), &d.Trace); err != nil {
			return state.Delivery{}, false, call, fmt.Errorf("decode trace context of %s: %w", sessionID, err)
		}
	}
	return d, true, call, nil
}

// CloseMailbox deletes the mailbox; later deliveries find no pending call.
func (s *Store) CloseMailbox(ctx context.Context, sessionID string) error {
	if err := s.rdb.Del(ctx, s.mailboxKey(sessionID)).Err(); err != nil {
		return fmt.Errorf("close mailbox of %s: %w", sessionID, err)
	}
	return nil
}

// Cancel records the request (so a watch started later still sees it) and
// then announces it.
func (s *Store) Cancel(ctx context.Context, runID string) error {
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.cancelKey(runID), "1", s.opts.SignalTTL)
		p.Publish(ctx, cancelChannel(s.opts.Prefix, runID), "cancel")
		return nil
	}); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return nil
}

// Cancelled watches for a cancel of runID. An idle watch is a map entry
// only: a kick (a cancel message, or a reconnect) starts one short check of
// the cancel key, which closes done when the key is there.
func (s *Store) Cancelled(ctx context.Context, runID string) (<-chan struct{}, func(), error) {
	c := &cancelWatch{s: s, runID: runID, ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
	w := &waiter{onKick: c.kick}
	c.unwatch = s.sub.watch(cancelChannel(s.opts.Prefix, runID), w)
	n, err := s.rdb.Exists(ctx, s.cancelKey(runID)).Result()
	if err != nil {
		c.unwatch()
		return nil, nil, fmt.Errorf("watch cancel of %s: %w", runID, err)
	}
	if n > 0 {
		c.fire()
	}
	return c.done, c.stop, nil
}

// cancelWatch is one Cancelled registration.
type cancelWatch struct {
	s       *Store
	runID   string
	ctx     context.Context
	unwatch func()

	mu       sync.Mutex
	checking bool
	again    bool
	closed   bool
	stopped  bool
	done     chan struct{}
}

func (c *cancelWatch) kick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.stopped {
		return
	}
	if c.checking {
		c.again = true
		return
	}
	c.checking = true
	go c.check()
}

// check reads the cancel key until a read succeeds with no kick in between;
// while Redis is unreachable it retries with backoff.
func (c *cancelWatch) check() {
	retry := newRetry()
	for {
		cctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		n, err := c.s.rdb.Exists(cctx, c.s.cancelKey(c.runID)).Result()
		cancel()
		if err == nil && n > 0 {
			c.fire()
		}
		c.mu.Lock()
		if c.closed || c.stopped || (err == nil && !c.again) {
			c.checking = false
			c.mu.Unlock()
			return
		}
		c.again = false
		c.mu.Unlock()
		if err != nil {
			<-retry.next()
		}
	}
}

func (c *cancelWatch) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
}

func (c *cancelWatch) stop() {
	c.mu.Lock()
	first := !c.stopped
	c.stopped = true
	c.mu.Unlock()
	if first {
		c.unwatch()
	}
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
