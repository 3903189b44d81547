package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

type startKey struct{}

// requestStart is when the gateway began serving r.
func requestStart(r *http.Request) time.Time {
	if t, ok := r.Context().Value(startKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// guard is the first thing every request meets: a Host that does not name
// this gateway is refused (so a DNS name rebound to its address reaches
// nothing, and no metric or span is made for it), and a GET that carries a
// body is refused rather than waited on.
func (g *Gateway) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.cfg.hostAllowed(r.Host) {
			refuseEarly(w, r, http.StatusMisdirectedRequest, codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_SERVED,
				fmt.Sprintf("host %q is not served here: it is not in NEXUS_PUBLIC_HOSTS", r.Host))
			return
		}
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.ContentLength > 0 || len(r.TransferEncoding) > 0) {
			refuseEarly(w, r, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST, r.Method+" requests carry no body")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), startKey{}, time.Now())))
	})
}

// streamCounter counts each user's open event streams.
type streamCounter struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newStreamCounter(max int) *streamCounter {
	return &streamCounter{max: max, open: map[string]int{}}
}

// streamLimiter holds each user to a number of open event streams: in this
// process (streamCounter) or across replicas (sharedLimits).
type streamLimiter interface {
	// acquire takes one of user's stream slots; release gives it back.
	acquire(user string) (release func(), ok bool)
	// maxOpen is the most streams a user may hold.
	maxOpen() int
}

func (c *streamCounter) maxOpen() int { return c.max }

// acquire takes one of user's stream slots; release gives it back.
func (c *streamCounter) acquire(user string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[user] >= c.max {
		return nil, false
	}
	c.open[user]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.open[user]--; c.open[user] <= 0 {
			delete(c.open, user)
		}
	}, true
}

// takeStream answers 429 and returns false when user holds the most streams
// allowed.
func (g *Gateway) takeStream(w http.ResponseWriter, user string) (func(), bool) {
	release, ok := g.streams.acquire(user)
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeProblem(w, http.StatusTooManyRequests, codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED,
			fmt.Sprintf("%d event streams are open for this user, the most allowed (NEXUS_MAX_STREAMS_PER_USER); close one first", g.streams.maxOpen()),
			&limitInfo{Name: "open_streams", Setting: "NEXUS_MAX_STREAMS_PER_USER", Max: int64(g.streams.maxOpen()), Actual: int64(g.streams.maxOpen() + 1)})
		return nil, false
	}
	return release, true
}
