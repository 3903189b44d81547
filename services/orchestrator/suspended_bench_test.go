package orchestrator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/modelrouter/replay"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// BenchmarkSuspendedRuns suspends 10,000 runs, each on its tool call, with
// nobody following them, and reports what they cost the process: goroutines
// in all (the orchestrator, its model-router and capability service and the
// loopback vendor share it) and heap per suspended run, measured after a GC
// against the same process with the sessions created but no run started.
// A suspended run is state in the store, so with Redis it costs the replica
// nothing; the in-process store keeps that state in the heap.
//
// The targets are fewer than 1,000 goroutines and at most 8 KiB per run; the
// benchmark fails when a figure is over.
func BenchmarkSuspendedRuns(b *testing.B) {
	const runs = 10000
	for _, tt := range []struct {
		name string
		env  func(b *testing.B) map[string]string
	}{
		{"redis", func(b *testing.B) map[string]string {
			return map[string]string{"NEXUS_REDIS_URL": statetest.StartRedis(b, "everysec").URL()}
		}},
		{"memory", func(*testing.B) map[string]string { return map[string]string{} }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				goroutines, heapPerRun := suspendMany(b, runs, tt.env(b))
				b.ReportMetric(float64(goroutines), "goroutines")
				b.ReportMetric(heapPerRun, "heap-B/run")
				if goroutines >= 1000 || heapPerRun > 8<<10 {
					b.Errorf("%d suspended runs: %d goroutines and %.0f B of heap per run, want fewer than 1000 and at most 8192", runs, goroutines, heapPerRun)
				}
			}
		})
	}
}

func suspendMany(b *testing.B, runs int, env map[string]string) (int, float64) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	vendor := httptest.NewServer(toolCallingVendor())
	b.Cleanup(vendor.Close)
	env["NEXUS_LOG_LEVEL"] = "error"
	stack := ot.Start(b, vendor.URL, env)

	sessions := make([]string, runs)
	parallel(ctx, b, runs, func(i int) error {
		s, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE})
		sessions[i] = s.GetSessionId()
		return err
	})
	baseGoroutines, baseHeap := measure()

	parallel(ctx, b, runs, func(i int) error {
		_, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sessions[i], Prompt: "Count the bodies"})
		return err
	})
	// Every run is suspended once its session names the pending call.
	for _, id := range sessions {
		for {
			s, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: id})
			if err != nil {
				b.Fatal(err)
			}
			if s.GetPendingToolCall() != nil {
				break
			}
			if s.GetActiveRunId() == "" {
				b.Fatalf("session %s: its run ended instead of waiting for its tool call", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	goroutines, heap := measure()
	b.Logf("%d suspended runs: %d goroutines (%d before), heap %d KiB (%d KiB before)", runs, goroutines, baseGoroutines, heap>>10, baseHeap>>10)
	return goroutines, float64(int64(heap)-int64(baseHeap)) / float64(runs)
}

// measure settles the process and reads its goroutines and live heap.
func measure() (int, uint64) {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// parallel runs fn for 0..n-1 on 32 workers and fails b on the first error.
func parallel(ctx context.Context, b *testing.B, n int, fn func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// toolCallingVendor answers every turn with one read-only tool call, in the
// Anthropic streaming wire format, and keeps nothing.
func toolCallingVendor() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{
			MessageID: fmt.Sprintf("msg_%06d", i), Model: "claude-sonnet-4-5", StopReason: "tool_use",
			Usage: replay.Usage{InputTokens: 900, OutputTokens: 40},
			Blocks: []replay.StreamBlock{{Kind: "tool_use", ToolID: fmt.Sprintf("toolu_%06d", i), ToolName: "execute_data_collection",
				Text: `{"code":"print(len(App.ActiveDocument.Objects))","description":"Count the bodies"}`, Pieces: 2}},
		})
	})
}
