package gateway

import (
	"net/http"
	"testing"
	"time"
)

// TestRateLimiter shows each user's bucket emptied by a burst and refilled
// by the clock, independently of other users.
func TestRateLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newRateLimiter(2, 3, func() time.Time { return now })
	steps := []struct {
		advance time.Duration
		user    string
		ok      bool
		wait    time.Duration
	}{
		{0, "alice", true, 0},
		{0, "alice", true, 0},
		{0, "alice", true, 0},
		{0, "alice", false, 500 * time.Millisecond},
		{0, "bob", true, 0},
		{250 * time.Millisecond, "alice", false, 250 * time.Millisecond},
		{250 * time.Millisecond, "alice", true, 0},
		{10 * time.Second, "alice", true, 0},
		{0, "alice", true, 0},
		{0, "alice", true, 0},
		{0, "alice", false, 500 * time.Millisecond},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, wait := l.take(s.user)
		if ok != s.ok || wait != s.wait {
			t.Errorf("step %d (%s): ok=%v wait=%v, want ok=%v wait=%v", i, s.user, ok, wait, s.ok, s.wait)
		}
	}
}

// TestRateLimitAnswers429 shows the limit over HTTP: a JSON 429 naming the
// setting, with Retry-After, for one user only.
func TestRateLimitAnswers429(t *testing.T) {
	// One request per hour refills nothing during the test.
	base := startGateway(t, realGatewayEnv(startRealStack(t), "NEXUS_RATE_LIMIT_RPS", "0.0002777", "NEXUS_RATE_LIMIT_BURST", "2"))
	for i, want := range []int{200, 200, 429} {
		resp := request(t, http.MethodGet, base+"/v1/models", aliceKey, "")
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d", i+1, resp.StatusCode, want)
		}
		if want == 429 {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			if e := apiErrorOf(t, resp); e.Status != "RESOURCE_EXHAUSTED" || e.Limit == nil || e.Limit.Setting != "NEXUS_RATE_LIMIT_RPS" {
				t.Errorf("error %+v", e)
			}
		}
	}
	if resp := request(t, http.MethodGet, base+"/v1/models", bobKey, ""); resp.StatusCode != 200 {
		t.Errorf("bob: status %d, want 200", resp.StatusCode)
	}
}
