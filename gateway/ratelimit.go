package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// rateLimiter is a token bucket per authenticated user: burst requests at
// once, refilled at rate per second. A run's stream is one request however
// long it lasts.
type rateLimiter struct {
	rate  float64
	burst float64
	now   func() time.Time
	// shared, when set, keeps the buckets in the store every replica shares.
	shared interface {
		take(user string) (bool, time.Duration)
	}

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// take spends one token of user's bucket; when none is left it returns how
// long until one is.
func (l *rateLimiter) take(user string) (bool, time.Duration) {
	if l.shared != nil {
		return l.shared.take(user)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[user]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[user] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// allow refuses a caller's request beyond the limiter's rate with 429 and
// a Retry-After, and returns false. A rate of zero turns limiting off.
func (l *rateLimiter) allow(w http.ResponseWriter, r *http.Request) bool {
	if l.rate <= 0 {
		return true
	}
	ok, wait := l.take(userFrom(r.Context()))
	if !ok {
		secs := int64(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeProblem(w, http.StatusTooManyRequests, codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_RATE_LIMITED,
			fmt.Sprintf("rate limit of %g requests per second (burst %g) reached (NEXUS_RATE_LIMIT_RPS, NEXUS_RATE_LIMIT_BURST); retry in %d s", l.rate, l.burst, secs),
			&limitInfo{Name: "requests_per_second", Setting: "NEXUS_RATE_LIMIT_RPS", Max: int64(l.burst)})
		return false
	}
	return true
}

// maxBuckets bounds the buckets kept; past it, full ones (idle keys) are
// dropped, so many client addresses cannot grow the map without bound.
const maxBuckets = 100000

// blocked says whether key's bucket is empty, without spending from it, and
// how long until it holds a token again.
func (l *rateLimiter) blocked(key string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		return 0, false
	}
	tokens := math.Min(l.burst, b.tokens+l.now().Sub(b.last).Seconds()*l.rate)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / l.rate * float64(time.Second)), true
}

// prune drops buckets that have refilled; callers hold l.mu.
func (l *rateLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
