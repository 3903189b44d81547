package replicatest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// follower is one client following a run the way an EventSource does: it
// reads the stream it started and, whenever a stream ends without the run's
// end, rejoins through any gateway after the last event id it saw.
type follower struct {
	m         *mesh
	sessionID string
	runID     string
	lastSeq   int64
	// calls counts the tool_call events seen per call id; a courier must
	// see each call once.
	calls    map[string]int
	order    []*agentv1.ToolCall
	restarts int
	rejoins  int
	complete *agentv1.Complete
	errChunk *agentv1.Error
	problems []string
	// onChunk, when set, sees every event first.
	onChunk func(*agentv1.StreamChunk)
}

func newFollower(m *mesh, sessionID string) *follower {
	return &follower{m: m, sessionID: sessionID, calls: map[string]int{}}
}

func (f *follower) ended() bool { return f.complete != nil || f.errChunk != nil }

// take reads one stream; onCall runs for each tool call, and returning false
// stops reading (the client goes away).
func (f *follower) take(resp *http.Response, onCall func(*agentv1.ToolCall) bool) error {
	return events(resp, func(c *agentv1.StreamChunk) bool {
		if c.GetSeq() == 0 {
			return true // the gateway's own error frame: rejoin
		}
		if c.GetSeq() <= f.lastSeq {
			f.problems = append(f.problems, fmt.Sprintf("event %d arrived again after %d", c.GetSeq(), f.lastSeq))
			return true
		}
		if f.lastSeq > 0 && c.GetSeq() != f.lastSeq+1 {
			f.problems = append(f.problems, fmt.Sprintf("event %d follows %d: events were skipped", c.GetSeq(), f.lastSeq))
		}
		f.runID, f.lastSeq = c.GetRunId(), c.GetSeq()
		if f.onChunk != nil {
			f.onChunk(c)
		}
		switch {
		case c.GetMetadata().GetTurnRestarted() != nil:
			f.restarts++
		case c.GetToolCall() != nil:
			tc := c.GetToolCall()
			f.calls[tc.GetToolCallId()]++
			f.order = append(f.order, tc)
			if onCall != nil && !onCall(tc) {
				return false
			}
		case c.GetComplete() != nil:
			f.complete = c.GetComplete()
		case c.GetError() != nil:
			f.errChunk = c.GetError()
		}
		return true
	})
}

// start posts the run and reads its stream.
func (f *follower) start(ctx context.Context, onCall func(*agentv1.ToolCall) bool) error {
	for attempt := 0; ; attempt++ {
		resp, err := f.m.do(ctx, http.MethodPost, f.m.gateway()+"/v1/sessions/"+f.sessionID+"/runs", `{"prompt":"How many bodies does the document have?"}`, nil)
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusServiceUnavailable && attempt < 20 {
			resp.Body.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return f.take(resp, onCall)
	}
}

// rejoin follows the run after the last event seen until it ends, through
// random gateways, trying again while replicas or Redis are away.
func (f *follower) rejoin(ctx context.Context, onCall func(*agentv1.ToolCall) bool) error {
	for !f.ended() {
		if ctx.Err() != nil {
			return fmt.Errorf("run %s of %s: %w after event %d", f.runID, f.sessionID, ctx.Err(), f.lastSeq)
		}
		f.rejoins++
		resp, err := f.m.do(ctx, http.MethodGet, f.m.gateway()+"/v1/runs/"+f.runID+"/events", "",
			map[string]string{"Last-Event-ID": strconv.FormatInt(f.lastSeq, 10)})
		if err == nil && resp.StatusCode == http.StatusOK {
			_ = f.take(resp, onCall)
			continue
		}
		if err == nil {
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// replicaHolding returns the index of the replica whose lease names runID:
// the one working on it.
func (m *mesh) replicaHolding(ctx context.Context, t *testing.T, runID string) int {
	t.Helper()
	opts, err := redis.ParseURL(m.redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	v, err := rdb.HGet(ctx, "nexus:{leases}:info", runID).Result()
	if err != nil {
		t.Fatalf("lease of run %s: %v", runID, err)
	}
	owner, _, _ := strings.Cut(v, "\n")
	for i, id := range m.replicas {
		if id == owner {
			return i
		}
	}
	t.Fatalf("run %s is leased to %q, not one of %v", runID, owner, m.replicas)
	return -1
}

// followAnswering starts the run, answers each tool call as a courier does
// and follows the run to its end, rejoining whenever its stream breaks.
func (f *follower) followAnswering(ctx context.Context, t *testing.T) {
	t.Helper()
	var answered sync.WaitGroup
	onCall := func(tc *agentv1.ToolCall) bool {
		// Read on the stream's goroutine, which writes f.
		runID := f.runID
		answered.Go(func() {
			if err := f.m.answer(ctx, &run{sessionID: f.sessionID, runID: runID}, tc); err != nil {
				t.Error(err)
			}
		})
		return true
	}
	if err := f.start(ctx, onCall); err != nil {
		t.Logf("first stream: %v", err)
	}
	err := f.rejoin(ctx, onCall)
	answered.Wait()
	if err != nil {
		t.Fatal(err)
	}
}

// check says what is wrong with a run that should have completed.
func (f *follower) check() error {
	switch {
	case len(f.problems) > 0:
		return fmt.Errorf("session %s: %s", f.sessionID, strings.Join(f.problems, "; "))
	case f.complete == nil:
		return fmt.Errorf("session %s: run %s ended without complete (error %v)", f.sessionID, f.runID, f.errChunk)
	}
	for id, n := range f.calls {
		if n != 1 {
			return fmt.Errorf("session %s: the courier saw tool call %s %d times", f.sessionID, id, n)
		}
	}
	return f.m.checkDelivered(&run{sessionID: f.sessionID, runID: f.runID, calls: f.order})
}

// suspendThenFault starts n runs, waits until each is suspended on its tool
// call with its client still following, applies fault, then lets every
// client post its result (the same result twice and a conflicting one) and
// follow its run to the end. Every run must complete, every client must see
// every event once, and every accepted result must reach the model once.
func suspendThenFault(t *testing.T, m *mesh, n int, fault func()) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var suspended sync.WaitGroup
	suspended.Add(n)
	release := make(chan struct{})
	followers := make([]*follower, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			once := sync.OnceFunc(suspended.Done)
			defer once()
			sid, err := m.createSession(ctx)
			if err != nil {
				errs <- err
				return
			}
			f := newFollower(m, sid)
			followers[i] = f
			var answered sync.WaitGroup
			onCall := func(tc *agentv1.ToolCall) bool {
				// Read on the stream's goroutine, which writes f.
				runID := f.runID
				answered.Go(func() {
					once()
					select {
					case <-release:
					case <-ctx.Done():
						return
					}
					if err := m.answer(ctx, &run{sessionID: sid, runID: runID}, tc); err != nil {
						t.Error(err)
					}
				})
				return true
			}
			if err := f.start(ctx, onCall); err != nil {
				t.Logf("session %s: first stream: %v", sid, err)
			}
			err = f.rejoin(ctx, onCall)
			answered.Wait()
			if err == nil {
				err = f.check()
			}
			errs <- err
		}()
	}
	suspended.Wait()
	fault()
	close(release)
	rejoins := 0
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, f := range followers {
		if f != nil {
			rejoins += f.rejoins
		}
	}
	t.Logf("%d runs completed; their clients rejoined %d times in all", n, rejoins)
}

// TestRunsOutliveTheirReplicasAndRedis is the durable-runs fault suite:
// separate processes (Redis with AOF, three orchestrators, two gateways), 50
// suspended runs each time, and a fault while they wait.
func TestRunsOutliveTheirReplicasAndRedis(t *testing.T) {
	const runs = 50
	t.Run("kill -9 of the replica holding them", func(t *testing.T) {
		t.Parallel()
		// Only replica 1 runs while the runs start, so it started and
		// serves all 50; the others join before it is killed.
		m := startMeshOpts(t, meshOptions{running: 1})
		suspendThenFault(t, m, runs, func() {
			m.startReplica(1)
			m.startReplica(2)
			m.orchs[0].Kill()
		})
	})
	t.Run("rolling restart: SIGTERM of all three replicas one after another", func(t *testing.T) {
		t.Parallel()
		m := startMesh(t)
		suspendThenFault(t, m, runs, func() {
			for i := range m.orchs {
				took, err := m.orchs[i].Terminate(time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s drained and exited %s after SIGTERM", m.replicas[i], took.Round(time.Millisecond))
				m.startReplica(i)
			}
		})
	})
	t.Run("Redis down 3 s with NEXUS_RUN_LEASE=5s", func(t *testing.T) {
		t.Parallel()
		m := startMesh(t, "NEXUS_RUN_LEASE=5s")
		suspendThenFault(t, m, runs, func() {
			m.redis.Stop(syscall.SIGTERM)
			time.Sleep(3 * time.Second) // the outage itself
			m.redis.Start()
		})
	})
	t.Run("Redis down 20 s with the default lease", func(t *testing.T) {
		t.Parallel()
		m := startMesh(t)
		suspendThenFault(t, m, runs, func() {
			m.redis.Stop(syscall.SIGTERM)
			time.Sleep(20 * time.Second) // the outage itself
			m.redis.Start()
		})
	})
}

// TestReplicaKilledMidTurn kills the replica that is streaming a model turn
// (a slow loopback vendor). Another replica redoes the turn from the saved
// transcript: the vendor sees that turn twice, the client sees a
// turn_restarted notice, and the courier sees the tool call once.
func TestReplicaKilledMidTurn(t *testing.T) {
	const lease = 3 * time.Second
	m := startMeshOpts(t, meshOptions{orchEnv: []string{"NEXUS_RUN_LEASE=" + lease.String()}, vendor: newPacedVendor(t, 100*time.Millisecond)})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFollower(m, sid)
	var killedAt time.Time
	f.onChunk = func(c *agentv1.StreamChunk) {
		if c.GetMessage() == nil || !killedAt.IsZero() {
			return
		}
		i := m.replicaHolding(ctx, t, c.GetRunId())
		m.orchs[i].Kill()
		killedAt = time.Now()
		t.Logf("killed %s in the middle of the first model turn, after event %d", m.replicas[i], c.GetSeq())
	}
	f.followAnswering(ctx, t)
	if killedAt.IsZero() {
		t.Fatal("the run ended before a replica could be killed in its turn")
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if f.restarts != 1 {
		t.Errorf("the client saw %d turn_restarted notices, want 1", f.restarts)
	}
	if n := m.vendor.firstTurns.Load(); n != 2 {
		t.Errorf("the vendor saw the first turn %d times, want 2 (once cut off, once redone)", n)
	}
	if n := m.vendor.resultTurns.Load(); n != 1 {
		t.Errorf("the vendor saw the turn after the result %d times, want 1", n)
	}
	t.Logf("the run completed %s after the kill (lease %s); the client rejoined %d times", time.Since(killedAt).Round(time.Millisecond), lease, f.rejoins)
}

// TestRejoinAfterDisconnect reads until the first tool call and goes away;
// the result is posted; rejoining with Last-Event-ID receives every later
// event once, and the run's complete.
func TestRejoinAfterDisconnect(t *testing.T) {
	m := startMesh(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFollower(m, sid)
	var call *agentv1.ToolCall
	if err := f.start(ctx, func(tc *agentv1.ToolCall) bool { call = tc; return false }); err != nil {
		t.Fatal(err)
	}
	if call == nil || f.ended() {
		t.Fatalf("the first stream ended without a tool call (complete %v, error %v)", f.complete, f.errChunk)
	}
	seenBefore := f.lastSeq
	// The client is gone; the run is not.
	if err := m.answer(ctx, &run{sessionID: sid, runID: f.runID}, call); err != nil {
		t.Fatal(err)
	}
	if err := f.rejoin(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if f.rejoins != 1 {
		t.Errorf("rejoined %d times, want 1", f.rejoins)
	}
	t.Logf("left after event %d; the rejoined stream carried events %d to %d once each, ending with complete", seenBefore, seenBefore+1, f.lastSeq)
}

// TestStartThenFollowLater starts a run with runs:start, which answers with
// the run id at once, and follows it later from the other gateway.
func TestStartThenFollowLater(t *testing.T) {
	m := startMesh(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.do(ctx, http.MethodPost, m.gateways[0]+"/v1/sessions/"+sid+"/runs:start", `{"prompt":"How many bodies does the document have?"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var started agentv1.StartRunResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(body, &started) != nil || started.GetRunId() == "" || started.GetSessionId() != sid {
		t.Fatalf("runs:start answered %s: %s", resp.Status, body)
	}
	f := newFollower(m, sid)
	f.runID = started.GetRunId()
	var answered sync.WaitGroup
	err = f.rejoin(ctx, func(tc *agentv1.ToolCall) bool {
		runID := f.runID
		answered.Go(func() {
			if err := m.answer(ctx, &run{sessionID: sid, runID: runID}, tc); err != nil {
				t.Error(err)
			}
		})
		return true
	})
	answered.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
}

// TestDrainHandsOverATurn sends SIGTERM to the replica streaming a slow
// model turn, with a drain timeout shorter than the turn: readiness goes
// NOT_SERVING, the turn is handed over to another replica, which redoes it,
// and the run completes with each tool call seen once.
func TestDrainHandsOverATurn(t *testing.T) {
	m := startMeshOpts(t, meshOptions{orchEnv: []string{"NEXUS_DRAIN_TIMEOUT=500ms"}, vendor: newPacedVendor(t, 100*time.Millisecond)})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFollower(m, sid)
	stopped := ""
	f.onChunk = func(c *agentv1.StreamChunk) {
		if c.GetMessage() == nil || stopped != "" {
			return
		}
		i := m.replicaHolding(ctx, t, c.GetRunId())
		stopped = m.replicas[i]
		id := stopped
		// Readiness goes NOT_SERVING before the replica lets go.
		conn, err := grpc.NewClient(m.orchAddr[i], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if first, err := watch.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %s before SIGTERM: %v, %v", id, first, err)
		}
		notServing := make(chan bool, 1)
		go func() {
			for {
				st, err := watch.Recv()
				if err != nil {
					notServing <- false
					return
				}
				if st.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
					notServing <- true
					return
				}
			}
		}()
		took, err := m.orchs[i].Terminate(time.Minute)
		if err != nil {
			t.Error(err)
		}
		if !<-notServing {
			t.Errorf("%s exited without reporting NOT_SERVING first", id)
		}
		t.Logf("%s reported NOT_SERVING and exited %s after SIGTERM in the middle of a model turn", id, took.Round(time.Millisecond))
	}
	f.followAnswering(ctx, t)
	if stopped == "" {
		t.Fatal("the run ended before a replica could be stopped in its turn")
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if f.restarts != 1 || m.vendor.firstTurns.Load() != 2 {
		t.Errorf("turn_restarted notices %d, first turns at the vendor %d; want 1 and 2 (the turn was handed over)", f.restarts, m.vendor.firstTurns.Load())
	}
}
