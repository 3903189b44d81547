package modelrouter

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// backoff is how long to wait before attempt+1: the vendor's retry-after when
// given, else an exponential delay with jitter, never more than limit.
func backoff(attempt int, retryAfter, base, limit time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, limit)
	}
	d := base << attempt
	if d <= 0 || d > limit {
		d = limit
	}
	return d/2 + rand.N(d/2+1)
}

// parseRetryAfter reads retry-after-ms or retry-after (seconds or a date).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
