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
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
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
	// Hosts lists the numbers of linked hosts the host-link delivery is
	// measured at; HostCalls is about how many calls each measures, started
	// HostCallRate a second over all hosts.
	Hosts        []int
	HostCalls    int
	HostCallRate int
	// ProfileDir, when set, receives CPU profiles of the mesh process
	// recorded during the largest level, one a second per store
	// (cpu-<store>-<n>.pprof).
	ProfileDir string
	// Reference is the plain forwarding proxy measured beside the mesh,
	// at the same concurrencies, in the same run.
	Reference ReferenceProxy
	// Floor measures the floor relay too (floor.go): the mesh's hops with
	// none of its work, at the same concurrencies, in the same run.
	Floor bool
	// Trace, when one of Concurrency, traces one run of that level per
	// store (trace.go); zero traces none.
	Trace int
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
	// MeshChunkLatencyMs is the path's own chunk latency (the mesh's, or the
	// reference's): receipt of a stamped delta minus the vendor's send stamp
	// on it. DirectChunkLatencyMs is the same for the streams read straight
	// from the vendor at the same time.
	MeshChunkLatencyMs   Percentiles `json:"mesh_chunk_latency_ms"`
	DirectChunkLatencyMs Percentiles `json:"direct_chunk_latency_ms"`
	// AddedChunkLatencyMs are percentiles of each chunk's latency through
	// the path minus that of the same delta read directly (latency.go).
	AddedChunkLatencyMs Percentiles `json:"added_chunk_latency_ms"`
	// The first chunk is from sending the request to the first stamped
	// delta; added is per stream, the path's minus the direct one's.
	MeshFirstChunkLatencyMs   Percentiles `json:"mesh_first_chunk_latency_ms"`
	DirectFirstChunkLatencyMs Percentiles `json:"direct_first_chunk_latency_ms"`
	AddedFirstChunkLatencyMs  Percentiles `json:"added_first_chunk_latency_ms"`
	// CPUMicrosPerChunk is the mesh process's CPU time per event; zero
	// against a deployment, whose processes the bench cannot see.
	CPUMicrosPerChunk float64 `json:"cpu_us_per_chunk"`
	// CPUFloorMultiple is CPUMicrosPerChunk as a multiple of the floor's at
	// the same concurrency in the same run; zero without a floor.
	CPUFloorMultiple float64 `json:"cpu_floor_multiple,omitempty"`
	// MessagesPerChunk counts the messages at each of the mesh's hops per
	// chunk delivered; nil where the services' counters cannot be read.
	MessagesPerChunk *Hops       `json:"messages_per_chunk,omitempty"`
	RendezvousMs     Percentiles `json:"rendezvous_ms"`
	Errors           int         `json:"errors"`
	FirstError       string      `json:"first_error,omitempty"`
	// Trace is the stages of one run of the level, with --trace.
	Trace *RunTrace `json:"trace,omitempty"`
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
	// HostLink is host-link delivery latency at each number of hosts.
	HostLink []HostLinkLevel `json:"host_link"`
	// CacheReadShare is, per turn of the caching loop, the share of input
	// tokens billed as cache reads.
	CacheReadShare []float64 `json:"cache_read_share"`
	// CacheReadShareFromTurn3 is the same over turns 3 and later.
	CacheReadShareFromTurn3 float64 `json:"cache_read_share_from_turn_3"`
	// Reference is the forwarding proxy measured in the same run.
	Reference *Reference `json:"reference,omitempty"`
	// Floor is the floor relay measured in the same run: what the mesh's
	// hops cost with none of its work.
	Floor *Reference `json:"floor,omitempty"`
}

// Run measures; it returns what it measured even when a part failed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rate <= 0 || len(o.Concurrency) == 0 {
		return nil, errors.New("bench: need a positive rate and at least one concurrency")
	}
	if len(o.Hosts) > 0 && o.HostCallRate <= 0 {
		return nil, fmt.Errorf("bench: the host-link calls need a positive rate a second, got %d", o.HostCallRate)
	}
	if o.Trace != 0 && (o.Gateway != "" || !slices.Contains(o.Concurrency, o.Trace)) {
		return nil, fmt.Errorf("bench: --trace %d traces a level of nexus dev the bench starts: one of the concurrencies %v, without --gateway", o.Trace, o.Concurrency)
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	host, _ := os.Hostname()
	rep := &Report{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), Machine: host,
		Settings: map[string]string{"rate_per_stream": strconv.Itoa(o.Rate), "concurrency": fmt.Sprint(o.Concurrency),
			"suspended_runs": strconv.Itoa(o.SuspendedRuns), "max_streams": strconv.Itoa(o.MaxStreams), "cache_turns": strconv.Itoa(o.CacheTurns),
			"hosts": fmt.Sprint(o.Hosts), "host_calls": strconv.Itoa(o.HostCalls), "host_call_rate": strconv.Itoa(o.HostCallRate),
			"reference": o.Reference.String(), "floor": strconv.FormatBool(o.Floor)}}
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

	if o.Reference == ReferenceNginx {
		ref, err := measureReference(ctx, o, v, logf, startNginx)
		rep.Reference = ref
		if err != nil {
			return rep, err
		}
	}
	if o.Floor {
		floor, err := measureReference(ctx, o, v, logf, func(ctx context.Context, v *vendor, hc *http.Client) (*proxy, error) {
			return startFloor(ctx, o, v, hc)
		})
		rep.Floor = floor
		if err != nil {
			return rep, err
		}
	}

	var traces *traceReceiver
	if o.Trace != 0 {
		rep.Settings["trace"] = strconv.Itoa(o.Trace)
		if traces, err = startTraceReceiver(); err != nil {
			return rep, err
		}
		defer traces.close()
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
		m, err := startMesh(ctx, o, v, store, traces)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st := Store{Name: store}
		var rendezvous []time.Duration
		for _, n := range o.Concurrency {
			logf("%s: %d concurrent streams", store, n)
			profileDir := ""
			if n == slices.Max(o.Concurrency) {
				profileDir = o.ProfileDir
			}
			l, rv, err := m.level(ctx, n, profileDir)
			if err != nil {
				errs = append(errs, err)
			}
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
			l, _, _ := m.level(ctx, n, "")
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
		// Last: the hosts it links would make the other measurements'
		// sessions ask which host they are for.
		for _, n := range o.Hosts {
			logf("%s: host-link delivery, %d linked hosts", store, n)
			rep.HostLink = append(rep.HostLink, m.hostLink(ctx, n, max(2, o.HostCalls/n), o.HostCallRate))
		}
		rep.Stores = append(rep.Stores, st)
		m.stop()
	}
	rep.relateToFloor()
	return rep, errors.Join(errs...)
}

// measureReference runs a reference (nginx or the floor) through every
// concurrency.
func measureReference(ctx context.Context, o Options, v *vendor, logf func(string, ...any), start func(context.Context, *vendor, *http.Client) (*proxy, error)) (*Reference, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}
	p, err := start(ctx, v, hc)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	ref := &Reference{Name: p.name, Version: p.version}
	for _, n := range o.Concurrency {
		logf("%s reference: %d concurrent streams", p.name, n)
		l := p.level(ctx, v, n)
		ref.Levels = append(ref.Levels, l)
		if l.Errors > 0 {
			return ref, fmt.Errorf("%s reference at %d streams: %d failed: %s", p.name, n, l.Errors, l.FirstError)
		}
	}
	return ref, nil
}

// defaultHostCallRate is how many host-link calls a second the bench starts
// over all linked hosts: 100 hosts each running a script every five seconds,
// a busy office; a FreeCAD script alone takes a third of a second or more.
const defaultHostCallRate = 20

// Short is the quick form make test and make bench run.
func Short() Options {
	return Options{Concurrency: []int{1, 10, 50}, Rate: 50, SuspendedRuns: 300, MaxStreams: 200, CacheTurns: 20, Hosts: []int{1, 10, 100}, HostCalls: 50, HostCallRate: defaultHostCallRate, Reference: ReferenceNginx, Floor: true}
}

// Full is what the closing notes and the README figures come from.
func Full() Options {
	return Options{Concurrency: []int{1, 50, 200}, Rate: 50, SuspendedRuns: 10000, MaxStreams: 2000, CacheTurns: 20, Hosts: []int{1, 10, 100}, HostCalls: 200, HostCallRate: defaultHostCallRate, Reference: ReferenceNginx, Floor: true}
}
