package redisstate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// waitFor polls cond until it holds; it is for readiness only (the number of
// registered waiters), never for timing.
func waitFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pubsubClients counts the server's pub/sub connections.
func pubsubClients(t testing.TB, ctx context.Context, s *redisstate.Store) int {
	t.Helper()
	list, err := s.Client().ClientList(ctx).Result()
	if err != nil {
		t.Fatalf("client list: %v", err)
	}
	n := 0
	for line := range strings.SplitSeq(list, "\n") {
		// A subscriber connection reports its subscriptions as psub=1 or sub=N.
		if strings.Contains(line, " psub=1 ") || strings.Contains(line, " cmd=psubscribe") {
			n++
		}
	}
	return n
}

// TestRedisRestartLosesNoResult suspends 100 runs from replica A, restarts
// Redis (a clean restart and a crash with every write synced), then posts
// every result through replica B and wakes the runs: each run is due with
// its own result, and each replica still has one subscriber connection.
func TestRedisRestartLosesNoResult(t *testing.T) {
	tests := []struct {
		name   string
		signal syscall.Signal
		// fsync is the append-only policy; a crash keeps the pending calls
		// only when every write was synced.
		fsync string
	}{
		{"clean restart", syscall.SIGTERM, "everysec"},
		{"crash", syscall.SIGKILL, "always"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const runs = 100
			srv := statetest.StartRedis(t, tt.fsync)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			a := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:"})
			defer a.Close()
			b := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "b", Prefix: "nexus:"})
			defer b.Close()

			for i := range runs {
				sid, run := fmt.Sprintf("session-%d", i), fmt.Sprintf("run-%d", i)
				if err := a.Expect(ctx, sid, "call", fmt.Sprintf("token-%d", i), time.Hour); err != nil {
					t.Fatal(err)
				}
				l := state.Lease{RunID: run, SessionID: sid, Owner: "a"}
				if err := a.Acquire(ctx, l, time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := a.Suspend(ctx, l, time.Hour); err != nil {
					t.Fatal(err)
				}
			}

			srv.Stop(tt.signal)
			srv.Start()

			for i := range runs {
				d := state.Delivery{
					Content: state.ResultDelivery(&hostv1.HostResult{Committed: true, Stdout: fmt.Sprintf("result %d", i)}),
					Trace:   map[string]string{"traceparent": fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)},
				}
				if err := b.Deliver(ctx, fmt.Sprintf("session-%d", i), "call", fmt.Sprintf("token-%d", i), d); err != nil {
					t.Fatalf("deliver %d after the restart: %v", i, err)
				}
				if err := b.Wake(ctx, fmt.Sprintf("run-%d", i)); err != nil {
					t.Fatalf("wake %d after the restart: %v", i, err)
				}
			}
			due, err := a.Due(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(due) != runs {
				t.Fatalf("%d runs due after their results, want %d", len(due), runs)
			}
			for _, l := range due {
				var i int
				if _, err := fmt.Sscanf(l.RunID, "run-%d", &i); err != nil {
					t.Fatal(err)
				}
				l.Owner = "a"
				if err := a.Claim(ctx, l, time.Minute); err != nil {
					t.Fatalf("claim %s: %v", l.RunID, err)
				}
				d, ok, err := a.Decide(ctx, l.SessionID, "call")
				if err != nil || !ok {
					t.Fatalf("run %d: ok=%v err=%v", i, ok, err)
				}
				if want := fmt.Sprintf("result %d", i); d.Content.GetResult().GetStdout() != want {
					t.Fatalf("run %d resumed with %q, want %q", i, d.Content.GetResult().GetStdout(), want)
				}
				if want := fmt.Sprintf("00-%032x-%016x-01", i+1, i+1); d.Trace["traceparent"] != want {
					t.Fatalf("run %d: trace %v, want traceparent %s", i, d.Trace, want)
				}
			}
			// The subscribers reconnect by themselves; there must then be
			// exactly one per replica.
			waitFor(t, ctx, "both subscribers back", func() bool { return pubsubClients(t, ctx, a) >= 2 })
			if n := pubsubClients(t, ctx, a); n != 2 {
				t.Fatalf("%d pub/sub connections after the restart, want 2 (one per replica)", n)
			}
		})
	}
}

// TestUnavailableIsMarked checks that a store whose Redis is gone says so
// with state.ErrUnavailable, which runs wait on instead of failing.
func TestUnavailableIsMarked(t *testing.T) {
	srv := statetest.StartRedis(t, "everysec")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:"})
	defer s.Close()
	srv.Stop(syscall.SIGKILL)
	checks := []struct {
		name string
		err  func() error
	}{
		{"get", func() error { _, err := s.Get(ctx, "s1"); return err }},
		{"script", func() error { return s.Renew(ctx, state.Lease{RunID: "r", SessionID: "s", Owner: "a"}, time.Second) }},
		{"pipeline", func() error { return s.Append(ctx, "r", &agentv1.StreamChunk{Seq: 1}) }},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.err(); !errors.Is(err, state.ErrUnavailable) {
				t.Fatalf("err = %v, want state.ErrUnavailable", err)
			}
		})
	}
}
