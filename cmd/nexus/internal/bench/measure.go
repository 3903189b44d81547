package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Measurement: streams at each concurrency, heap per suspended run, and the
// prompt-cache loop, all through a running mesh.

// parallel runs fn for 0..n-1 with at most workers at once.
func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// level runs n streams through the mesh and n straight from the vendor at
// the same time; with profileDir set, it records a CPU profile of the mesh
// from the moment the streams start.
func (m *mesh) level(ctx context.Context, n int, profileDir string) (Level, []time.Duration, error) {
	l := Level{Store: m.store, Streams: n}
	sessions := make([]string, n)
	errs := make([]error, n)
	parallel(n, 64, func(i int) { sessions[i], errs[i] = m.c.createSession(ctx) })
	if err := errors.Join(errs...); err != nil {
		l.Errors, l.FirstError = n, err.Error()
		return l, nil, nil
	}
	meshS, directS := make([]sample, n), make([]sample, n)
	// The traced run is the middle one started, neither first nor last in
	// line for anything.
	var tr *tracedRun
	traced := -1
	if m.traces != nil && n == m.traceAt {
		tr, traced = newTracedRun(), n/2
	}
	var prof *profiler
	if profileDir != "" {
		prof = m.startProfile(ctx, profileDir)
	}
	// A deployment's counters cannot be read from here; nexus dev's can.
	counts0, countErr := m.messageCounts(ctx)
	cpu0 := m.cpuTime()
	var cores *cpuSampler
	var sched0 []schedBucket
	if tr != nil && m.proc != nil {
		cores = startCPUSampler(m.proc.Process.Pid)
		sched0, _ = m.schedBuckets(ctx)
	}
	var wg sync.WaitGroup
	for i := range n {
		run := tr
		if i != traced {
			run = nil
		}
		wg.Go(func() { meshS[i] = m.c.run(ctx, sessions[i], "How many bodies does the document have?", run) })
		wg.Go(func() { directS[i] = direct(ctx, m.c.http, m.c.vendor) })
	}
	wg.Wait()
	cpu := m.cpuTime() - cpu0
	var sched SchedLatency
	if cores != nil {
		cores.close()
		if sched1, err := m.schedBuckets(ctx); err == nil {
			sched = schedBetween(sched0, sched1)
		}
	}
	var counts []float64
	if countErr == nil {
		counts, countErr = m.messageCounts(ctx)
	}
	if m.metrics == "" {
		countErr = nil
	}
	var profErr error
	if prof != nil {
		profErr = prof.stop()
	}

	var via, beside []sample
	var rendezvous []time.Duration
	for i := range n {
		if err := meshS[i].err; err != nil {
			if l.Errors == 0 {
				l.FirstError = err.Error()
			}
			l.Errors++
			continue
		}
		l.Chunks += meshS[i].chunks
		via, beside = append(via, meshS[i]), append(beside, directS[i])
		rendezvous = append(rendezvous, meshS[i].rendezvous...)
	}
	l.setLatencies(via, beside)
	l.MessagesPerChunk = hopsPerChunk(counts0, counts, l.Chunks)
	l.RendezvousMs = percentiles(rendezvous)
	if l.Chunks > 0 && cpu > 0 {
		l.CPUMicrosPerChunk = float64(cpu.Microseconds()) / float64(l.Chunks)
	}
	if tr != nil {
		l.Trace = m.traces.collect(ctx, tr, m.c.vendor, cores)
		l.Trace.Sched = sched
	}
	return l, rendezvous, errors.Join(profErr, countErr)
}

// heapAlloc reads the mesh process's live heap after a GC, from the heap
// profile its internal listener serves.
func (m *mesh) heapAlloc(ctx context.Context) (int64, error) {
	if m.metrics == "" {
		return 0, errors.New("the heap of a deployment's processes cannot be read from here")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/debug/pprof/heap?gc=1&debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := m.c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read the heap profile (NEXUS_METRICS_ADDR): %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read the heap profile (NEXUS_METRICS_ADDR): %s", resp.Status)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("the heap profile has no HeapAlloc line")
}

// suspendedHeap starts n runs that stop at their tool call, with nobody
// following, and returns the heap they cost per run; then cancels them.
func (m *mesh) suspendedHeap(ctx context.Context, n int) (float64, error) {
	if n <= 0 {
		return 0, nil
	}
	sessions := make([]string, n)
	errs := make([]error, n)
	parallel(n, 64, func(i int) { sessions[i], errs[i] = m.c.createSession(ctx) })
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	before, err := m.heapAlloc(ctx)
	if err != nil {
		return 0, err
	}
	parallel(n, 64, func(i int) {
		resp, err := m.c.do(ctx, http.MethodPost, "/v1/sessions/"+sessions[i]+"/runs:start", `{"prompt":"`+quickMarker+` look"}`)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("start run: %s", resp.Status)
			}
		}
		errs[i] = err
	})
	defer parallel(n, 64, func(i int) {
		if resp, err := m.c.do(context.WithoutCancel(ctx), http.MethodPost, "/v1/sessions/"+sessions[i]+":cancel", `{}`); err == nil {
			resp.Body.Close()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	for _, id := range sessions {
		for {
			pending, err := m.pending(ctx, id)
			if err != nil {
				return 0, err
			}
			if pending {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	after, err := m.heapAlloc(ctx)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

func (m *mesh) pending(ctx context.Context, sessionID string) (bool, error) {
	resp, err := m.c.do(ctx, http.MethodGet, "/v1/sessions/"+sessionID, "")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var s struct {
		PendingToolCall json.RawMessage `json:"pendingToolCall"`
		ActiveRunID     string          `json:"activeRunId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return false, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	if s.ActiveRunID == "" {
		return false, fmt.Errorf("session %s: its run ended instead of waiting for its tool call", sessionID)
	}
	return len(s.PendingToolCall) > 0 && string(s.PendingToolCall) != "null", nil
}

// cacheLoop runs one session through the caching loop and returns, per
// model turn, the share of input tokens billed as cache reads.
func (m *mesh) cacheLoop(ctx context.Context) ([]float64, error) {
	id, err := m.c.createSession(ctx)
	if err != nil {
		return nil, err
	}
	s := m.c.run(ctx, id, cacheLoopMarker+" Look at the document again and again before you answer.", nil)
	if s.err != nil {
		return nil, fmt.Errorf("caching loop: %w", s.err)
	}
	var out []float64
	for _, u := range s.usage {
		t := u.GetTurn()
		all := float64(t.GetInputTokens() + t.GetCacheReadTokens() + t.GetCacheWriteTokens())
		if all > 0 {
			out = append(out, float64(t.GetCacheReadTokens())/all)
		}
	}
	return out, nil
}
