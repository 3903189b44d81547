package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
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

// schedBuckets reads the mesh's cumulative scheduling-latency buckets.
func (m *mesh) schedBuckets(ctx context.Context) ([]schedBucket, error) {
	host, p, err := net.SplitHostPort(m.metrics)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port+1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the scheduling latencies at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var out []schedBucket
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), schedLatencyMetric+`{le="`)
		if !ok {
			continue
		}
		le, count, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		b := schedBucket{le: math.Inf(1)}
		if le != "+Inf" {
			if b.le, err = strconv.ParseFloat(le, 64); err != nil {
				continue
			}
		}
		if b.count, err = strconv.ParseFloat(strings.TrimSpace(count), 64); err == nil {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out, sc.Err()
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
