package statetest_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// BenchmarkHostLinkDelivery measures, at 1, 10 and 100 linked hosts each
// watching its log, the time from a call written to one host's delivery log
// to that host's link holding it (woken and read back), in memory and on
// Redis. It reports p50 and p99.
func BenchmarkHostLinkDelivery(b *testing.B) {
	stores := map[string]func(b *testing.B) state.Hosts{
		"memory": func(*testing.B) state.Hosts { return memory.NewHosts(nil) },
		"redis": func(b *testing.B) state.Hosts {
			s, err := redisstate.Open(context.Background(), statetest.RedisURL(), redisstate.Options{Prefix: statetest.Prefix(b, statetest.RedisURL()), ReplicaID: "bench"})
			if err != nil {
				b.Skipf("redis: %v", err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return redisstate.NewHosts(s)
		},
	}
	for _, name := range []string{"memory", "redis"} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/hosts=%d", name, n), func(b *testing.B) {
				h := stores[name](b)
				ctx := context.Background()
				kicks := make([]<-chan struct{}, n)
				for i := range n {
					k, stop, err := h.Watch(ctx, fmt.Sprintf("h_%d", i))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(stop)
					<-k
					kicks[i] = k
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					host := i % n
					key := fmt.Sprintf("h_%d", host)
					start := time.Now()
					if _, err := h.Offer(ctx, key, &agentv1.HostCall{SessionId: "s", ToolCall: &agentv1.ToolCall{ToolCallId: fmt.Sprint(i)}}); err != nil {
						b.Fatal(err)
					}
					<-kicks[host]
					calls, err := h.Calls(ctx, key)
					if err != nil || len(calls) == 0 {
						b.Fatalf("calls: %v %v", calls, err)
					}
					lat = append(lat, time.Since(start))
					b.StopTimer()
					_ = h.Ack(ctx, key, "s", fmt.Sprint(i))
					b.StartTimer()
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
