package redisstate_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestRedisRestartLosesNoResult suspends 100 runs on replica A, restarts
// Redis (a clean restart and a crash), posts every result through replica B
// after it is back, and checks that every run on A wakes up with its own
// result and that each replica still has one subscriber connection.
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

			type woke struct {
				i   int
				d   state.Delivery
				err error
				at  time.Time
			}
			wakes := make(chan woke, runs)
			for i := range runs {
				sid := fmt.Sprintf("session-%d", i)
				if err := a.Expect(ctx, sid, "call", fmt.Sprintf("token-%d", i), time.Hour); err != nil {
					t.Fatal(err)
				}
				go func() {
					d, err := a.Wait(ctx, sid, "call")
					wakes <- woke{i, d, err, time.Now()}
				}()
			}
			waitFor(t, ctx, "runs suspended", func() bool { return a.Stats().Waiters == runs })

			srv.Stop(tt.signal)
			srv.Start()
			back := time.Now()

			for i := range runs {
				d := state.Delivery{
					Result: &hostv1.HostResult{Committed: true, Stdout: fmt.Sprintf("result %d", i)},
					Trace:  map[string]string{"traceparent": fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)},
				}
				if err := b.Deliver(ctx, fmt.Sprintf("session-%d", i), "call", fmt.Sprintf("token-%d", i), d); err != nil {
					t.Fatalf("deliver %d after the restart: %v", i, err)
				}
			}
			var last time.Time
			for range runs {
				w := <-wakes
				if w.err != nil {
					t.Fatalf("run %d: %v", w.i, w.err)
				}
				if want := fmt.Sprintf("result %d", w.i); w.d.Result.GetStdout() != want {
					t.Fatalf("run %d woke with %q, want %q", w.i, w.d.Result.GetStdout(), want)
				}
				if want := fmt.Sprintf("00-%032x-%016x-01", w.i+1, w.i+1); w.d.Trace["traceparent"] != want {
					t.Fatalf("run %d: trace %v, want traceparent %s", w.i, w.d.Trace, want)
				}
				last = w.at
			}
			t.Logf("all %d runs resumed %s after redis answered again", runs, last.Sub(back).Round(time.Millisecond))
			// Replica B has nobody waiting, so its subscriber may still be in
			// its reconnect backoff: wait for it, then there must be exactly
			// one subscriber per replica, not one per run.
			waitFor(t, ctx, "both subscribers back", func() bool { return pubsubClients(t, ctx, a) >= 2 })
			if n := pubsubClients(t, ctx, a); n != 2 {
				t.Fatalf("%d pub/sub connections after the restart, want 2 (one per replica)", n)
			}
		})
	}
}
