package replicatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/reaper"
)

// run is one client's view of a run.
type run struct {
	sessionID string
	runID     string
	lastSeq   int64
	calls     []*agentv1.ToolCall
	complete  *agentv1.Complete
	errChunk  *agentv1.Error
}

// startRun posts a run through a random gateway and reads its stream,
// calling onCall for every tool call; onCall returns false to stop reading
// (the run is then left suspended, its stream open until ctx ends).
func (m *mesh) startRun(ctx context.Context, sessionID string, onCall func(r *run, tc *agentv1.ToolCall) (bool, error)) (*run, error) {
	r := &run{sessionID: sessionID}
	var resp *http.Response
	// A gateway may first pick a replica that just died; it answers 503
	// until its connection notices, which the client retries like any 503.
	for attempt := 0; ; attempt++ {
		var err error
		resp, err = m.do(ctx, http.MethodPost, m.gateway()+"/v1/sessions/"+sessionID+"/runs", `{"prompt":"How many bodies does the document have?"}`, nil)
		if err != nil {
			return r, err
		}
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == 20 {
			break
		}
		resp.Body.Close()
	}
	var cbErr error
	err := events(resp, func(c *agentv1.StreamChunk) bool {
		if c.GetSeq() > 0 {
			r.runID, r.lastSeq = c.GetRunId(), c.GetSeq()
		}
		switch {
		case c.GetToolCall() != nil:
			r.calls = append(r.calls, c.GetToolCall())
			more, err := onCall(r, c.GetToolCall())
			cbErr = err
			return more && err == nil
		case c.GetComplete() != nil:
			r.complete = c.GetComplete()
		case c.GetError() != nil:
			r.errChunk = c.GetError()
		}
		return true
	})
	return r, errors.Join(err, cbErr)
}

// answer posts the tool result through a random gateway and then a
// duplicate through the other one, which must be refused.
func (m *mesh) answer(ctx context.Context, r *run, tc *agentv1.ToolCall) error {
	first := m.gateway()
	code, err := m.postResult(ctx, first, r.sessionID, tc, "objects in "+r.sessionID)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("post result of %s through %s: status %d, %v", tc.GetToolCallId(), first, code, err)
	}
	other := m.gateways[0]
	if other == first {
		other = m.gateways[1]
	}
	code, err = m.postResult(ctx, other, r.sessionID, tc, "a duplicate for "+r.sessionID)
	if err != nil || (code != http.StatusConflict && code != http.StatusBadRequest) {
		return fmt.Errorf("duplicate result of %s through %s: status %d (want 409, or 400 once the run moved on), %v", tc.GetToolCallId(), other, code, err)
	}
	return nil
}

// checkDelivered checks that the model was sent the call's result exactly
// once, and the first one posted.
func (m *mesh) checkDelivered(r *run) error {
	for _, tc := range r.calls {
		got := m.vendor.toolResults(tc.GetToolCallId())
		if len(got) != 1 || !strings.Contains(got[0], "objects in "+r.sessionID) {
			return fmt.Errorf("session %s: the model was sent %d results for %s: %q", r.sessionID, len(got), tc.GetToolCallId(), got)
		}
	}
	return nil
}

// TestTwoHundredSessionsAcrossReplicas runs 200 sessions at once through two
// gateways in front of three orchestrator replicas; every tool result goes
// through a gateway chosen at random (so usually not the replica holding the
// run) and is posted twice. Every run must complete and the model must see
// every result exactly once.
func TestTwoHundredSessionsAcrossReplicas(t *testing.T) {
	const sessions = 200
	m := startMesh(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for range sessions {
		wg.Go(func() {
			sid, err := m.createSession(ctx)
			if err != nil {
				errs <- err
				return
			}
			r, err := m.startRun(ctx, sid, func(r *run, tc *agentv1.ToolCall) (bool, error) {
				return true, m.answer(ctx, r, tc)
			})
			switch {
			case err != nil:
				errs <- fmt.Errorf("session %s: %w", sid, err)
			case r.complete == nil:
				errs <- fmt.Errorf("session %s: run %s ended without complete (error %v)", sid, r.runID, r.errChunk)
			case len(r.calls) != 1:
				errs <- fmt.Errorf("session %s: %d tool calls, want 1", sid, len(r.calls))
			default:
				errs <- m.checkDelivered(r)
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 10 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed", failed, sessions)
	}
	t.Logf("%d sessions, each with one suspended tool call, completed in %s", sessions, time.Since(begin).Round(time.Millisecond))
}

// TestRedisRestartWithWaitingRuns suspends 100 runs on their tool calls,
// restarts Redis (append-only persistence, as deployed), and then posts
// every result: every run must complete.
func TestRedisRestartWithWaitingRuns(t *testing.T) {
	const runs = 100
	m := startMesh(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var suspended sync.WaitGroup
	suspended.Add(runs)
	restarted := make(chan struct{})
	done := make(chan time.Time, runs)
	errs := make(chan error, runs)
	for range runs {
		go func() {
			sid, err := m.createSession(ctx)
			if err != nil {
				suspended.Done()
				errs <- err
				return
			}
			once := sync.OnceFunc(suspended.Done)
			r, err := m.startRun(ctx, sid, func(r *run, tc *agentv1.ToolCall) (bool, error) {
				once()
				select {
				case <-restarted:
				case <-ctx.Done():
					return false, ctx.Err()
				}
				return true, m.answer(ctx, r, tc)
			})
			once()
			switch {
			case err != nil:
				errs <- fmt.Errorf("session %s: %w", sid, err)
			case r.complete == nil:
				errs <- fmt.Errorf("session %s: run %s ended without complete (error %v)", sid, r.runID, r.errChunk)
			default:
				errs <- m.checkDelivered(r)
			}
			done <- time.Now()
		}()
	}
	suspended.Wait()
	m.redis.Stop(syscall.SIGTERM)
	m.redis.Start()
	back := time.Now()
	close(restarted)
	var last time.Time
	for range runs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for len(done) > 0 {
		if at := <-done; at.After(last) {
			last = at
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d runs waited through a redis restart; all completed %s after redis was back", runs, last.Sub(back).Round(time.Millisecond))
}

// TestReplicaKilledMidRun kills the replica that holds a suspended run. The
// client that started it, and one that rejoins through any gateway, must see
// it end with the replica_lost error once the lease runs out, and the session
// must accept the next run, which completes.
func TestReplicaKilledMidRun(t *testing.T) {
	const lease = 3 * time.Second
	m := startMesh(t, "NEXUS_RUN_LEASE="+lease.String())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The client keeps reading the stream it started: when the replica dies
	// the gateway follows the run from another one.
	suspended := make(chan *run, 1)
	ended := make(chan *run, 1)
	go func() {
		r, err := m.startRun(ctx, sid, func(r *run, tc *agentv1.ToolCall) (bool, error) {
			cp := *r
			suspended <- &cp
			return true, nil
		})
		if err != nil {
			t.Logf("original stream: %v", err)
		}
		if r.calls == nil {
			suspended <- nil
		}
		ended <- r
	}()
	r := <-suspended
	if r == nil {
		t.Fatal("the run never reached its tool call")
	}

	// The lease names the replica that holds the run.
	opts, err := redis.ParseURL(m.redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	v, err := rdb.HGet(ctx, "nexus:{leases}:info", r.runID).Result()
	if err != nil {
		t.Fatalf("lease of run %s: %v", r.runID, err)
	}
	owner, _, _ := strings.Cut(v, "\n")
	killed := -1
	for i, id := range m.replicas {
		if id == owner {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("run %s is leased to %q, not one of %v", r.runID, owner, m.replicas)
	}
	m.orchs[killed].Kill()
	killedAt := time.Now()

	// The client that started the run sees it end on its own stream.
	orig := <-ended
	if orig.errChunk.GetCode() != reaper.ErrorCode {
		t.Fatalf("the original stream ended with %v after seq %d, want a %s error", orig.errChunk, orig.lastSeq, reaper.ErrorCode)
	}
	t.Logf("the %s error reached the original stream %s after %s was killed (lease %s)", reaper.ErrorCode, time.Since(killedAt).Round(time.Millisecond), owner, lease)

	// Rejoin after the last event seen, as an EventSource does.
	var final *agentv1.StreamChunk
	for attempt := 0; final == nil; attempt++ {
		resp, err := m.do(ctx, http.MethodGet, m.gateway()+"/v1/runs/"+r.runID+"/events", "", map[string]string{"Last-Event-ID": strconv.FormatInt(r.lastSeq, 10)})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable && attempt < 20 {
			resp.Body.Close()
			continue
		}
		var last *agentv1.StreamChunk
		if err := events(resp, func(c *agentv1.StreamChunk) bool { last = c; return true }); err != nil {
			t.Fatalf("rejoin run %s: %v", r.runID, err)
		}
		if last != nil && last.GetSeq() > 0 {
			final = last
		}
	}
	if final.GetError().GetCode() != reaper.ErrorCode || final.GetSeq() <= r.lastSeq {
		t.Fatalf("rejoined stream ended with %v, want a %s error after seq %d", final, reaper.ErrorCode, r.lastSeq)
	}

	next, err := m.startRun(ctx, sid, func(r *run, tc *agentv1.ToolCall) (bool, error) { return true, m.answer(ctx, r, tc) })
	if err != nil {
		t.Fatalf("next run on session %s: %v", sid, err)
	}
	if next.complete == nil {
		t.Fatalf("next run ended without complete (error %v)", next.errChunk)
	}
	if err := m.checkDelivered(next); err != nil {
		t.Fatal(err)
	}
}
