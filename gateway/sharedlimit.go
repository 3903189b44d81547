package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// With NEXUS_REDIS_URL set, each user's request rate and open streams are
// counted in Redis, so every gateway replica holds a user to one limit, not
// one limit per replica. Without it, the in-process counters stand (one
// gateway, as nexus dev runs it).

// takeBucket spends one token of the user's bucket in Redis, by Redis's own
// clock so replicas' clocks never disagree. KEYS[1] the bucket; ARGV rate
// per millisecond, burst. Returns {1, 0} or {0, milliseconds to wait}.
const takeBucketLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens = tonumber(h[1]) or burst
local last = tonumber(h[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - last) * rate)
local ok, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'last', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return {ok, wait}
`

// takeSlot adds a stream to the user's set unless it holds max live ones.
// Members expire at their score (a gateway that died frees its streams when
// they lapse); the gateway holding a stream renews it. KEYS[1] the set; ARGV
// member, max, lease in milliseconds.
const takeSlotLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
local lease = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`

// renewSlots moves the given members' expiry on, where they still exist.
// KEYS[1] the set; ARGV lease in milliseconds, then the members.
const renewSlotsLua = `
local t = redis.call('TIME')
local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', at, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0
`

// streamLease is how long a stream's slot outlives the last renewal of the
// gateway holding it; renewals come at a third of it.
const streamLease = 45 * time.Second

// storeTimeout bounds one limiter call to Redis: a slow store lets the
// request through rather than holding it.
const storeTimeout = 500 * time.Millisecond

// sharedLimits counts requests and streams in Redis. A Redis that does not
// answer admits the request (and says so in the log): an outage delays
// nothing, as for the rest of the mesh.
type sharedLimits struct {
	rdb                              redis.UniversalClient
	takeBucket, takeSlot, renewSlots *redis.Script
	rate                             float64
	burst                            int
	maxStreams                       int
	log                              *slog.Logger

	mu   sync.Mutex
	held map[string]map[string]struct{} // user -> stream ids this gateway holds
	stop chan struct{}
	done chan struct{}
}

func newSharedLimits(rdb redis.UniversalClient, l Limits, log *slog.Logger) *sharedLimits {
	s := &sharedLimits{rdb: rdb, takeBucket: redis.NewScript(takeBucketLua), takeSlot: redis.NewScript(takeSlotLua), renewSlots: redis.NewScript(renewSlotsLua),
		rate: l.RateLimitRPS, burst: l.RateLimitBurst, maxStreams: l.MaxStreamsPerUser, log: log,
		held: map[string]map[string]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	go s.renew()
	return s
}

func bucketKey(user string) string { return "nexus:gateway:rate:" + user }
func slotsKey(user string) string  { return "nexus:gateway:streams:" + user }

// take spends one of the user's requests, as rateLimiter.take does.
func (s *sharedLimits) take(user string) (bool, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	res, err := s.takeBucket.Run(ctx, s.rdb, []string{bucketKey(user)}, s.rate/1000, s.burst).Int64Slice()
	if err != nil || len(res) != 2 {
		s.log.Warn("rate limit store unavailable, request admitted", "err", err)
		return true, 0
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond
}

// acquire takes one of the user's stream slots, as streamCounter.acquire does.
func (s *sharedLimits) acquire(user string) (release func(), ok bool) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	n, err := s.takeSlot.Run(ctx, s.rdb, []string{slotsKey(user)}, id, s.maxStreams, streamLease.Milliseconds()).Int()
	if err != nil {
		s.log.Warn("stream limit store unavailable, stream admitted", "err", err)
	} else if n == 0 {
		return nil, false
	}
	s.mu.Lock()
	if s.held[user] == nil {
		s.held[user] = map[string]struct{}{}
	}
	s.held[user][id] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.held[user], id)
		if len(s.held[user]) == 0 {
			delete(s.held, user)
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := s.rdb.ZRem(ctx, slotsKey(user), id).Err(); err != nil {
			s.log.Warn("stream slot not released; it lapses by itself", "err", err, "within", streamLease.String())
		}
	}, true
}

// maxOpen is the most streams a user may hold.
func (s *sharedLimits) maxOpen() int { return s.maxStreams }

// renew keeps the slots of the streams this gateway holds from lapsing.
func (s *sharedLimits) renew() {
	defer close(s.done)
	t := time.NewTicker(streamLease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		byUser := make(map[string][]any, len(s.held))
		for user, ids := range s.held {
			for id := range ids {
				byUser[user] = append(byUser[user], id)
			}
		}
		s.mu.Unlock()
		for user, ids := range byUser {
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			err := s.renewSlots.Run(ctx, s.rdb, []string{slotsKey(user)}, append([]any{streamLease.Milliseconds()}, ids...)...).Err()
			cancel()
			if err != nil && err != redis.Nil {
				s.log.Warn("stream slots not renewed", "err", err)
			}
		}
	}
}

// close stops the renewals and the client.
func (s *sharedLimits) close() error {
	close(s.stop)
	<-s.done
	return s.rdb.Close()
}
