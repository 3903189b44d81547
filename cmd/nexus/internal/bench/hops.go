package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Hops are messages per chunk delivered at each of the mesh's hops, read
// from the counters the services expose on their internal listeners.
type Hops struct {
	// RouterToOrchestrator counts the model router's messages on its turn
	// streams (StreamTurn) to the orchestrator.
	RouterToOrchestrator float64 `json:"router_to_orchestrator"`
	// OrchestratorToGateway counts the orchestrator's messages to the
	// runs' followers (Run, StreamRunEvents).
	OrchestratorToGateway float64 `json:"orchestrator_to_gateway"`
	// SSEWrites counts the gateway's flushed writes to its clients.
	SSEWrites float64 `json:"sse_writes"`
	// StoreAppends counts appends to the runs' event logs.
	StoreAppends float64 `json:"store_appends"`
}

// hopCounter is one counter of one service of nexus dev: the service's
// place among the internal listeners (devmetrics.go in cmd/nexus: the
// gateway's at NEXUS_METRICS_ADDR, then the orchestrator's, the model
// router's) and the counter's name as Prometheus shows it.
type hopCounter struct {
	listener int
	name     string
}

// hopCounters are the counters of Hops, in its fields' order.
func hopCounters() []hopCounter {
	return []hopCounter{
		{2, "nexus_turn_stream_messages_total"},
		{1, "nexus_run_stream_messages_total"},
		{0, "nexus_sse_writes_total"},
		{1, "nexus_events_appends_total"},
	}
}

// messageCounts reads the hops' counters now, in hopCounters' order.
func (m *mesh) messageCounts(ctx context.Context) ([]float64, error) {
	if m.metrics == "" {
		return nil, errors.New("the counters of a deployment's services are not read from here")
	}
	scraped := map[int]map[string]float64{}
	var out []float64
	for _, c := range hopCounters() {
		if scraped[c.listener] == nil {
			var err error
			if scraped[c.listener], err = m.scrape(ctx, c.listener); err != nil {
				return nil, err
			}
		}
		out = append(out, scraped[c.listener][c.name])
	}
	return out, nil
}

// metricLines calls fn with each sample line of the Prometheus text page
// of nexus dev's internal listener the given number of ports after the
// first (the gateway's, then the orchestrator's, then the model router's).
func (m *mesh) metricLines(ctx context.Context, listener int, fn func(line string)) error {
	host, p, err := net.SplitHostPort(m.metrics)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port+listener))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := m.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("read the metrics at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read the metrics at %s: %s", addr, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line[0] != '#' {
			fn(line)
		}
	}
	return sc.Err()
}

// scrape reads a listener's metrics, each metric's samples summed over
// their labels.
func (m *mesh) scrape(ctx context.Context, listener int) (map[string]float64, error) {
	out := map[string]float64{}
	err := m.metricLines(ctx, listener, func(line string) {
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return
			}
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[name] += v
		}
	})
	return out, err
}

// hopsPerChunk turns two readings of the counters into messages per chunk.
func hopsPerChunk(before, after []float64, chunks int) *Hops {
	if len(before) != len(hopCounters()) || len(after) != len(before) || chunks <= 0 {
		return nil
	}
	per := func(i int) float64 { return (after[i] - before[i]) / float64(chunks) }
	return &Hops{RouterToOrchestrator: per(0), OrchestratorToGateway: per(1), SSEWrites: per(2), StoreAppends: per(3)}
}
