package bench

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
)

// How long the mesh's goroutines waited to run during the traced level:
// the Go runtime's histogram of scheduling latencies
// (go_sched_latencies_seconds), read from the orchestrator's internal
// listener before and after the level. nexus dev is one process, so every
// service's listener shows the same histogram. A step of a run that waits
// for nothing else still waits this long each time it wakes.

// schedLatencyMetric is the histogram's buckets as Prometheus shows them.
const schedLatencyMetric = "go_sched_latencies_seconds_bucket"

// SchedLatency is the level's scheduling latencies: how many times a
// goroutine became ready to run, and how long it waited, in ms (the upper
// bound of the histogram's bucket the percentile falls in).
type SchedLatency struct {
	Wakeups float64 `json:"wakeups"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
}

type schedBucket struct {
	le    float64
	count float64
}

// schedBuckets reads the mesh's cumulative scheduling-latency buckets from
// the orchestrator's internal listener.
func (m *mesh) schedBuckets(ctx context.Context) ([]schedBucket, error) {
	var out []schedBucket
	err := m.metricLines(ctx, 1, func(line string) {
		rest, ok := strings.CutPrefix(line, schedLatencyMetric+`{le="`)
		if !ok {
			return
		}
		le, count, ok := strings.Cut(rest, `"} `)
		if !ok {
			return
		}
		b := schedBucket{le: math.Inf(1)}
		if le != "+Inf" {
			var err error
			if b.le, err = strconv.ParseFloat(le, 64); err != nil {
				return
			}
		}
		if c, err := strconv.ParseFloat(strings.TrimSpace(count), 64); err == nil {
			b.count = c
			out = append(out, b)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out, err
}

// schedBetween is the latencies of the wake-ups between two readings.
func schedBetween(before, after []schedBucket) SchedLatency {
	if len(before) != len(after) || len(after) == 0 {
		return SchedLatency{}
	}
	total := after[len(after)-1].count - before[len(before)-1].count
	if total <= 0 {
		return SchedLatency{}
	}
	at := func(q float64) float64 {
		for i := range after {
			if after[i].count-before[i].count >= q*total {
				if math.IsInf(after[i].le, 1) && i > 0 {
					return after[i-1].le * 1000
				}
				return after[i].le * 1000
			}
		}
		return 0
	}
	return SchedLatency{Wakeups: total, P50: at(0.5), P90: at(0.9), P99: at(0.99)}
}
