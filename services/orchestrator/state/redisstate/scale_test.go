package redisstate_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestTenThousandSuspendedRunsShareOneConnection suspends 10,000 runs on one
// replica (each with its cancel watch, as a real run has), checks that the
// replica holds one pub/sub connection for all of them and a bounded number
// of others, wakes them all from a second replica, and reports the memory a
// suspended run costs.
func TestTenThousandSuspendedRunsShareOneConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 suspended runs take a few seconds")
	}
	const runs = 10000
	srv := statetest.StartRedis(t, "everysec")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	a := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:"})
	defer a.Close()
	b := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "b", Prefix: "nexus:"})
	defer b.Close()

	for i := range runs {
		if err := b.Expect(ctx, fmt.Sprintf("session-%d", i), "call", "token", time.Hour); err != nil {
			t.Fatal(err)
		}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	type woke struct {
		i   int
		d   state.Delivery
		err error
	}
	wakes := make(chan woke, runs)
	stops := make([]func(), 0, runs)
	for i := range runs {
		sid := fmt.Sprintf("session-%d", i)
		_, stop, err := a.Cancelled(ctx, fmt.Sprintf("run-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
		go func() {
			d, err := a.Wait(ctx, sid, "call")
			wakes <- woke{i, d, err}
		}()
	}
	waitFor(t, ctx, "runs suspended", func() bool { return a.Stats().Waiters == 2*runs })

	runtime.GC()
	runtime.ReadMemStats(&after)
	used := (after.HeapAlloc + after.StackInuse) - (before.HeapAlloc + before.StackInuse)
	t.Logf("%d suspended runs (mailbox wait + cancel watch): %d bytes each (heap and goroutine stacks)", runs, used/runs)

	if n := pubsubClients(t, ctx, a); n != 2 {
		t.Fatalf("%d pub/sub connections with %d suspended runs, want 2 (one per replica)", n, runs)
	}
	total, err := a.Client().ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if conns := len(splitLines(total)); conns > 100 {
		t.Fatalf("%d client connections for two replicas with %d suspended runs; the pool must not grow per run", conns, runs)
	}

	for i := range runs {
		d := state.Delivery{Result: &hostv1.HostResult{Stdout: fmt.Sprint(i)}}
		if err := b.Deliver(ctx, fmt.Sprintf("session-%d", i), "call", "token", d); err != nil {
			t.Fatal(err)
		}
	}
	for range runs {
		w := <-wakes
		if w.err != nil || w.d.Result.GetStdout() != fmt.Sprint(w.i) {
			t.Fatalf("run %d woke with %v, %v", w.i, w.d.Result, w.err)
		}
	}
	for _, stop := range stops {
		stop()
	}
	if st := a.Stats(); st.Waiters != 0 || st.Channels != 0 {
		t.Fatalf("after every run resumed the subscriber still holds %+v", st)
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, s[:i])
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

// BenchmarkDeliverWake measures how long a suspended run on replica A takes
// to wake after replica B accepts its result: from the start of Deliver to
// the return of Wait. It reports the median and the 99th percentile.
func BenchmarkDeliverWake(b *testing.B) {
	url := statetest.RedisURL()
	ctx := b.Context()
	prefix := statetest.Prefix(b, url)
	ra := openTest(b, url, redisstate.Options{ReplicaID: "a", Prefix: prefix})
	defer ra.Close()
	rb := openTest(b, url, redisstate.Options{ReplicaID: "b", Prefix: prefix})
	defer rb.Close()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		sid := fmt.Sprintf("session-%d", i)
		if err := ra.Expect(ctx, sid, "call", "token", time.Minute); err != nil {
			b.Fatal(err)
		}
		woke := make(chan time.Time, 1)
		go func() {
			if _, err := ra.Wait(ctx, sid, "call"); err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		for ra.Stats().Waiters == 0 {
			runtime.Gosched()
		}
		start := time.Now()
		if err := rb.Deliver(ctx, sid, "call", "token", state.Delivery{Result: &hostv1.HostResult{}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-woke).Sub(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
