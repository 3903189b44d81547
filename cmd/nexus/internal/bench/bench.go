// Package bench is nexus bench: it measures what the mesh adds to what the
// model vendor already costs. A loopback vendor in the Anthropic wire format
// streams a realistic turn (thinking, prose, a tool call whose arguments
// arrive as many small deltas) at a set rate, with every text delta stamped
// with its send time; clients read the same turns straight from the vendor
// and through the mesh, side by side in one run, at each concurrency, and
// couriers answer the tool calls. The mesh is one nexus dev process (or a
// running deployment), so its CPU time can be read.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options say what to measure.
type Options struct {
	// Binary is the nexus binary that runs the mesh (nexus dev).
	Binary string
	// Concurrency lists the numbers of concurrent streams to measure.
	Concurrency []int
	// Rate is how many deltas a second each stream types.
	Rate int
	// RedisURL, when set, measures everything a second time with the
	// orchestrator's state in Redis (use a server of its own: the bench
	// writes under the default key prefix).
	RedisURL string
	// Gateway measures a running deployment instead of starting nexus dev;
	// its model-router must use VendorAddr as ANTHROPIC_BASE_URL.
	Gateway    string
	VendorAddr string
	APIKey     string
	// SuspendedRuns is how many runs the heap-per-suspended-run figure
	// suspends at once.
	SuspendedRuns int
	// MaxStreams is where the sustained-streams ramp stops.
	MaxStreams int
	// CacheTurns is the length of the prompt-caching loop.
	CacheTurns int
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Percentiles are milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Level is one concurrency measured with one state store.
type Level struct {
	Store   string `json:"store"`
	Streams int    `json:"streams"`
	// Chunks is how many events the mesh delivered.
	Chunks int `json:"chunks"`
	// AddedChunkLatencyMs is the mesh's chunk latency minus the vendor's.
	AddedChunkLatencyMs      Percentiles `json:"added_chunk_latency_ms"`
	AddedFirstChunkLatencyMs Percentiles `json:"added_first_chunk_latency_ms"`
	MeshChunkLatencyMs       Percentiles `json:"mesh_chunk_latency_ms"`
	DirectChunkLatencyMs     Percentiles `json:"direct_chunk_latency_ms"`
	// CPUMicrosPerChunk is the mesh process's CPU time per event; zero
	// against a deployment, whose processes the bench cannot see.
	CPUMicrosPerChunk float64     `json:"cpu_us_per_chunk"`
	RendezvousMs      Percentiles `json:"rendezvous_ms"`
	Errors            int         `json:"errors"`
	FirstError        string      `json:"first_error,omitempty"`
}

// Store sums up one state store.
type Store struct {
	Name string `json:"name"`
	// RendezvousMs is from a courier's result POST to the vendor's next
	// request, over every level.
	RendezvousMs Percentiles `json:"rendezvous_ms"`
	// HeapPerSuspendedRunBytes is the mesh process's live heap per run
	// waiting on its tool call (negative when it could not be read).
	HeapPerSuspendedRunBytes float64 `json:"heap_per_suspended_run_bytes"`
	HeapNote                 string  `json:"heap_note,omitempty"`
	// SustainedStreams is the most concurrent streams that ran with no error.
	SustainedStreams int `json:"sustained_streams"`
}

// Report is everything nexus bench measured.
type Report struct {
	GoVersion string            `json:"go_version"`
	OS        string            `json:"os"`
	Arch      string            `json:"arch"`
	Cores     int               `json:"cores"`
	Machine   string            `json:"machine"`
	Settings  map[string]string `json:"settings"`
	Levels    []Level           `json:"levels"`
	Stores    []Store           `json:"stores"`
	// CacheReadShare is, per turn of the caching loop, the share of input
	// tokens billed as cache reads.
	CacheReadShare []float64 `json:"cache_read_share"`
	// CacheReadShareFromTurn3 is the same over turns 3 and later.
	CacheReadShareFromTurn3 float64 `json:"cache_read_share_from_turn_3"`
}

// Run measures; it returns what it measured even when a part failed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rate <= 0 || len(o.Concurrency) == 0 {
		return nil, errors.New("bench: need a positive rate and at least one concurrency")
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	host, _ := os.Hostname()
	rep := &Report{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), Machine: host,
		Settings: map[string]string{"rate_per_stream": strconv.Itoa(o.Rate), "concurrency": fmt.Sprint(o.Concurrency),
			"suspended_runs": strconv.Itoa(o.SuspendedRuns), "max_streams": strconv.Itoa(o.MaxStreams), "cache_turns": strconv.Itoa(o.CacheTurns)}}
	v, err := startVendor(o.VendorAddr, o.Rate, o.CacheTurns)
	if err != nil {
		return rep, err
	}
	defer v.close()
	if o.RedisURL == "auto" {
		url, stop, err := startRedis(ctx)
		if err != nil {
			return rep, err
		}
		defer stop()
		o.RedisURL = url
	}

	stores := []string{"memory"}
	if o.RedisURL != "" {
		stores = append(stores, "redis")
	}
	if o.Gateway != "" {
		stores = []string{"deployment"}
	}
	var errs []error
	for _, store := range stores {
		m, err := startMesh(ctx, o, v, store)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st := Store{Name: store}
		var rendezvous []time.Duration
		for _, n := range o.Concurrency {
			logf("%s: %d concurrent streams", store, n)
			l, rv := m.level(ctx, n)
			rep.Levels = append(rep.Levels, l)
			rendezvous = append(rendezvous, rv...)
		}
		st.RendezvousMs = percentiles(rendezvous)
		logf("%s: heap per suspended run (%d runs)", store, o.SuspendedRuns)
		st.HeapPerSuspendedRunBytes, err = m.suspendedHeap(ctx, o.SuspendedRuns)
		if err != nil {
			st.HeapPerSuspendedRunBytes, st.HeapNote = -1, err.Error()
		}
		// The ramp doubles from the largest level up to MaxStreams, which it
		// always tries last.
		for n := slices.Max(o.Concurrency); n < o.MaxStreams; {
			n = min(2*n, o.MaxStreams)
			logf("%s: sustained streams, %d at once", store, n)
			l, _ := m.level(ctx, n)
			if l.Errors > 0 {
				logf("%s: %d of %d streams failed: %s", store, l.Errors, n, l.FirstError)
				break
			}
			st.SustainedStreams = n
		}
		if st.SustainedStreams == 0 {
			st.SustainedStreams = slices.Max(o.Concurrency)
		}
		if store != "redis" && o.CacheTurns > 0 && len(rep.CacheReadShare) == 0 {
			logf("%s: a %d-turn loop for prompt caching", store, o.CacheTurns)
			rep.CacheReadShare, err = m.cacheLoop(ctx)
			if err != nil {
				errs = append(errs, err)
			}
			var read, all float64
			for i, sh := range rep.CacheReadShare {
				if i >= 2 {
					read += sh
					all++
				}
			}
			if all > 0 {
				rep.CacheReadShareFromTurn3 = read / all
			}
		}
		rep.Stores = append(rep.Stores, st)
		m.stop()
	}
	return rep, errors.Join(errs...)
}

// startRedis runs a redis-server of the bench's own on a free port, keeping
// nothing on disk, so the bench never shares keys with anything else.
func startRedis(ctx context.Context) (string, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server for --redis auto (is it installed?): %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	for start := time.Now(); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "redis://" + addr + "/0", stop, nil
		}
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mesh is what the bench measures: nexus dev in a process of its own, or a
// deployment behind a gateway.
type mesh struct {
	c       *client
	proc    *exec.Cmd
	exited  chan struct{}
	metrics string
	store   string
	dataDir string
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePorts finds n consecutive free loopback ports and returns the first.
func freePorts(n int) (string, error) {
	for range 50 {
		first, err := freeAddr()
		if err != nil {
			return "", err
		}
		_, p, _ := net.SplitHostPort(first)
		port, _ := strconv.Atoi(p)
		ok := port+n <= 65535
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return first, nil
		}
	}
	return "", errors.New("no run of free ports found")
}

func startMesh(ctx context.Context, o Options, v *vendor, store string) (*mesh, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 0}}
	if o.Gateway != "" {
		return &mesh{c: &client{base: strings.TrimRight(o.Gateway, "/"), apiKey: o.APIKey, http: hc, vendor: v}, store: store}, nil
	}
	// A port found free can be taken by another process before nexus dev
	// binds it; such a start is tried again on other ports.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		m, out, err := startDev(ctx, o, v, store, hc)
		if err == nil || attempt == attempts || !strings.Contains(out, "address already in use") {
			return m, err
		}
	}
}

// startDev starts nexus dev on free ports, with a data folder and a CLI
// state file of its own, and waits until it is ready; on failure it returns
// what the process printed.
func startDev(ctx context.Context, o Options, v *vendor, store string, hc *http.Client) (*mesh, string, error) {
	addrs := make([]string, 4)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, "", fmt.Errorf("find a free port: %w", err)
		}
		addrs[i] = a
	}
	// nexus dev serves each service's metrics and profiles from the metrics
	// port and the three after it.
	metricsAddr, err := freePorts(4)
	if err != nil {
		return nil, "", fmt.Errorf("find free ports for the metrics listeners: %w", err)
	}
	addrs = append(addrs, metricsAddr)
	// The run history and audit log of a bench are thrown away with it.
	dataDir, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		return nil, "", fmt.Errorf("make a data folder for nexus dev: %w", err)
	}
	cmd := exec.Command(o.Binary, "dev", "--no-host")
	cmd.Env = append(os.Environ(),
		"NEXUS_HTTP_ADDR="+addrs[0], "NEXUS_ORCHESTRATOR_ADDR="+addrs[1], "NEXUS_MODEL_ROUTER_ADDR="+addrs[2], "NEXUS_CAPABILITY_ADDR="+addrs[3],
		"NEXUS_METRICS_ADDR="+addrs[4], "ANTHROPIC_BASE_URL="+v.url, "ANTHROPIC_API_KEY=bench", "NEXUS_DEFAULT_MODEL=anthropic/claude-sonnet-4-5",
		"NEXUS_LOG_LEVEL=error", "NEXUS_RATE_LIMIT_RPS=0", "NEXUS_MAX_STREAMS_PER_USER=100000", "NEXUS_DATA_DIR="+dataDir,
		"NEXUS_DEV_STATE="+filepath.Join(dataDir, "dev.json"))
	if store == "redis" {
		cmd.Env = append(cmd.Env, "NEXUS_REDIS_URL="+o.RedisURL)
	}
	var out strings.Builder
	w := &lockedWriter{w: &out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dataDir)
		return nil, "", fmt.Errorf("start nexus dev: %w", err)
	}
	exited := make(chan struct{})
	m := &mesh{c: &client{base: "http://" + addrs[0], http: hc, vendor: v}, proc: cmd, exited: exited, metrics: addrs[4], store: store, dataDir: dataDir}
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := hc.Get(m.c.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, "", nil
			}
		}
		select {
		case <-exited:
			m.stop()
			return nil, w.String(), fmt.Errorf("nexus dev exited during start:\n%s", w.String())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.stop()
			return nil, w.String(), fmt.Errorf("nexus dev did not get ready: %v\n%s", err, w.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.w)
}

func (m *mesh) stop() {
	if m.proc == nil {
		return
	}
	_ = m.proc.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.proc.Process.Kill()
		<-m.exited
	}
	_ = os.RemoveAll(m.dataDir)
}

// cpuTime is the mesh process's user and system CPU time so far.
func (m *mesh) cpuTime() time.Duration {
	if m.proc == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.proc.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// The kernel counts in clock ticks of 1/100 s on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

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
// the same time.
func (m *mesh) level(ctx context.Context, n int) (Level, []time.Duration) {
	l := Level{Store: m.store, Streams: n}
	sessions := make([]string, n)
	errs := make([]error, n)
	parallel(n, 64, func(i int) { sessions[i], errs[i] = m.c.createSession(ctx) })
	if err := errors.Join(errs...); err != nil {
		l.Errors, l.FirstError = n, err.Error()
		return l, nil
	}
	meshS, directS := make([]sample, n), make([]sample, n)
	cpu0 := m.cpuTime()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { meshS[i] = m.c.run(ctx, sessions[i], "How many bodies does the document have?") })
		wg.Go(func() { directS[i] = direct(ctx, m.c.http, m.c.vendor) })
	}
	wg.Wait()
	cpu := m.cpuTime() - cpu0

	var meshLat, directLat, meshFirst, directFirst, rendezvous []time.Duration
	for i := range n {
		if err := meshS[i].err; err != nil {
			if l.Errors == 0 {
				l.FirstError = err.Error()
			}
			l.Errors++
			continue
		}
		l.Chunks += meshS[i].chunks
		meshLat = append(meshLat, meshS[i].chunkLatency...)
		meshFirst = append(meshFirst, meshS[i].firstChunk)
		rendezvous = append(rendezvous, meshS[i].rendezvous...)
		directLat = append(directLat, directS[i].chunkLatency...)
		directFirst = append(directFirst, directS[i].firstChunk)
	}
	l.MeshChunkLatencyMs, l.DirectChunkLatencyMs = percentiles(meshLat), percentiles(directLat)
	l.AddedChunkLatencyMs = minus(l.MeshChunkLatencyMs, l.DirectChunkLatencyMs)
	l.AddedFirstChunkLatencyMs = minus(percentiles(meshFirst), percentiles(directFirst))
	l.RendezvousMs = percentiles(rendezvous)
	if l.Chunks > 0 && cpu > 0 {
		l.CPUMicrosPerChunk = float64(cpu.Microseconds()) / float64(l.Chunks)
	}
	return l, rendezvous
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return Percentiles{P50: ms(s[len(s)/2]), P99: ms(s[min(len(s)-1, len(s)*99/100)]), Max: ms(s[len(s)-1])}
}

func minus(a, b Percentiles) Percentiles {
	return Percentiles{P50: a.P50 - b.P50, P99: a.P99 - b.P99, Max: a.Max - b.Max}
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
	s := m.c.run(ctx, id, cacheLoopMarker+" Look at the document again and again before you answer.")
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

// Short is the quick form make test and make bench run.
func Short() Options {
	return Options{Concurrency: []int{1, 10, 50}, Rate: 50, SuspendedRuns: 300, MaxStreams: 200, CacheTurns: 20}
}

// Full is what the closing notes and the README figures come from.
func Full() Options {
	return Options{Concurrency: []int{1, 50, 200}, Rate: 50, SuspendedRuns: 10000, MaxStreams: 1000, CacheTurns: 20}
}
