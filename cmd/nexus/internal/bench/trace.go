package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"nexus.local/platform/telemetry/otlpreceiver"
)

// --trace: one run of a level carries a sampled traceparent on its start POST
// and its courier's result POST; nexus dev samples only what a sampled parent
// asks for and exports it to a receiver of the bench's own, and the bench
// lays the spans out beside its own stamps (the client's and the vendor's),
// all read from one clock: the machine's.

// Stage is one step of the traced run: a span one of the mesh's services
// exported, or a stamp of the bench's own (its client's or its vendor's).
type Stage struct {
	Stage   string `json:"stage"`
	Process string `json:"process"`
	// OffsetMs is from the client sending the start POST.
	OffsetMs   float64 `json:"offset_ms"`
	DurationMs float64 `json:"duration_ms"`
	// Point marks a moment (a stamp, or an event a span noted), which has
	// no duration.
	Point bool `json:"point,omitempty"`
}

// RunTrace is the trace of one run of a level: the stages of its first chunk
// (the start POST to the client reading the first stamped delta) and of its
// tool-result rendezvous (the result POST to the vendor receiving the next
// request), each stage that began inside the stretch, in the order they
// began.
type RunTrace struct {
	TraceID      string  `json:"trace_id"`
	FirstChunkMs float64 `json:"first_chunk_ms"`
	RendezvousMs float64 `json:"rendezvous_ms"`
	FirstChunk   []Stage `json:"first_chunk"`
	Rendezvous   []Stage `json:"rendezvous"`
	// FirstChunkCPU and RendezvousCPU are what the machine's cores did
	// meanwhile (tracecpu.go).
	FirstChunkCPU WindowCPU `json:"first_chunk_cpu"`
	RendezvousCPU WindowCPU `json:"rendezvous_cpu"`
	// Sched is how long the mesh's goroutines waited to run over the
	// level (tracesched.go).
	Sched SchedLatency `json:"sched_latency"`
	// Error says what kept the trace from being read whole.
	Error string `json:"error,omitempty"`
}

// The bench's own processes, as the stages name them.
const (
	processClient = "bench client"
	processVendor = "bench vendor"
)

// traceReceiver is the OTLP/HTTP receiver nexus dev exports to.
type traceReceiver struct {
	recv *otlpreceiver.Receiver
	srv  *http.Server
	url  string
}

func startTraceReceiver() (*traceReceiver, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the trace receiver: %w", err)
	}
	t := &traceReceiver{recv: &otlpreceiver.Receiver{}, url: "http://" + lis.Addr().String()}
	t.srv = &http.Server{Handler: t.recv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = t.srv.Serve(lis) }()
	return t, nil
}

func (t *traceReceiver) close() { _ = t.srv.Close() }

// env points nexus dev's exporter at the receiver and keeps only the traces
// a sampled parent asks for, exported a tenth of a second after they end.
func (t *traceReceiver) env() []string {
	return []string{"OTEL_SDK_DISABLED=false", "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + t.url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + t.url + "/v1/traces",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=parentbased_always_off", "OTEL_BSP_SCHEDULE_DELAY=100"}
}

// tracedRun is the traced run's identity and the bench's stamps on it.
type tracedRun struct {
	traceID trace.TraceID

	mu sync.Mutex
	// start is when the client sent the start POST, firstRead when it read
	// the first stamped delta, whose send stamp is firstSent; posted is
	// when it sent the result POST of call.
	start, firstSent, firstRead, posted time.Time
	call                                string
}

func newTracedRun() *tracedRun {
	r := &tracedRun{}
	_, _ = rand.Read(r.traceID[:])
	return r
}

// traceparent is a sampled parent in the run's trace, for one request.
func (r *tracedRun) traceparent() string {
	var span trace.SpanID
	_, _ = rand.Read(span[:])
	return "00-" + r.traceID.String() + "-" + span.String() + "-01"
}

// stamp records what the client saw, under the lock: the run's stamps are
// written while it runs and read once it has ended.
func (r *tracedRun) stamp(f func(r *tracedRun)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// traceSettle is how long the receiver must get no more of the run's spans
// before the trace is taken as whole, and traceWait how long it is waited
// for at most.
const (
	traceSettle = 500 * time.Millisecond
	traceWait   = 15 * time.Second
)

// collect waits for the run's spans and lays them out beside the stamps.
func (t *traceReceiver) collect(ctx context.Context, r *tracedRun, v *vendor, cores *cpuSampler) *RunTrace {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &RunTrace{TraceID: r.traceID.String()}
	if r.firstRead.IsZero() || r.posted.IsZero() {
		out.Error = "the traced run read no stamped delta or posted no result"
		return out
	}
	requested, okReq := v.requested(r.call)
	answered, okAns := v.arrival(r.call)
	if !okReq || !okAns {
		out.Error = "the vendor did not see the traced run's requests"
		return out
	}
	mine := func(sp otlpreceiver.Span) bool { return bytes.Equal(sp.TraceID, r.traceID[:]) }
	var spans []otlpreceiver.Span
	deadline := time.Now().Add(traceWait)
	for last, lastChange := -1, time.Now(); ; {
		spans = t.recv.Spans(mine)
		if len(spans) != last {
			last, lastChange = len(spans), time.Now()
		}
		if (len(spans) > 0 && time.Since(lastChange) >= traceSettle) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(spans) == 0 {
		out.Error = "nexus dev exported no span of the traced run"
	}
	if cores != nil {
		out.FirstChunkCPU, out.RendezvousCPU = cores.between(r.start, r.firstRead), cores.between(r.posted, answered)
	}
	ms := func(at time.Time) float64 { return float64(at.Sub(r.start).Microseconds()) / 1000 }
	out.FirstChunkMs, out.RendezvousMs = ms(r.firstRead), float64(answered.Sub(r.posted).Microseconds())/1000
	out.FirstChunk = stages(spans, r.start, r.start, r.firstRead,
		Stage{Stage: "start POST sent", Process: processClient},
		Stage{Stage: "model request received", Process: processVendor, OffsetMs: ms(requested)},
		Stage{Stage: "first delta sent", Process: processVendor, OffsetMs: ms(r.firstSent)},
		Stage{Stage: "first delta read", Process: processClient, OffsetMs: ms(r.firstRead)})
	out.Rendezvous = stages(spans, r.start, r.posted, answered,
		Stage{Stage: "result POST sent", Process: processClient, OffsetMs: ms(r.posted)},
		Stage{Stage: "next model request received", Process: processVendor, OffsetMs: ms(answered)})
	return out
}

// stages are the stamps and the spans that began between from and to, in
// the order they began, offsets from start.
func stages(spans []otlpreceiver.Span, start, from, to time.Time, stamps ...Stage) []Stage {
	out := stamps
	for i := range out {
		out[i].Point = true
	}
	in := func(at uint64) bool { t := time.Unix(0, int64(at)); return !t.Before(from) && !t.After(to) }
	offset := func(at uint64) float64 { return float64(time.Unix(0, int64(at)).Sub(start).Microseconds()) / 1000 }
	for _, sp := range spans {
		if in(sp.Start) {
			out = append(out, Stage{Stage: sp.Name, Process: sp.Service, OffsetMs: offset(sp.Start),
				DurationMs: float64(time.Duration(sp.End-sp.Start).Microseconds()) / 1000})
		}
		for _, e := range sp.Events {
			if in(e.Time) {
				out = append(out, Stage{Stage: sp.Name + ": " + e.Name, Process: sp.Service, OffsetMs: offset(e.Time), Point: true})
			}
		}
	}
	// A stamp goes before a span that began at the same microsecond: the
	// client's send is what the gateway's span answers.
	sort.SliceStable(out, func(i, j int) bool { return out[i].OffsetMs < out[j].OffsetMs })
	return out
}

// writeTrace prints a traced level's stages after the levels' table.
func writeTrace(w io.Writer, l Level) {
	t := l.Trace
	fmt.Fprintf(w, "trace of one run, %s, %d streams (trace %s): first chunk %.2f ms, rendezvous %.2f ms\n", l.Store, l.Streams, t.TraceID, t.FirstChunkMs, t.RendezvousMs)
	if t.Error != "" {
		fmt.Fprintf(w, "  the trace is not whole: %s\n", t.Error)
	}
	if s := t.Sched; s.Wakeups > 0 {
		fmt.Fprintf(w, "  over the level the mesh's goroutines became ready to run %.0f times and waited p50 %.3f ms, p90 %.3f ms, p99 %.3f ms to run\n", s.Wakeups, s.P50, s.P90, s.P99)
	}
	for _, part := range []struct {
		name   string
		stages []Stage
		cpu    WindowCPU
	}{{"first chunk", t.FirstChunk, t.FirstChunkCPU}, {"rendezvous", t.Rendezvous, t.RendezvousCPU}} {
		fmt.Fprintf(w, "  %s: meanwhile the mesh used %.1f ms of CPU and the bench %.1f ms, %.2f cores busy (%.2f with every process)\n",
			part.name, part.cpu.MeshMs, part.cpu.BenchMs, part.cpu.Cores, part.cpu.MachineCores)
		fmt.Fprintf(w, "    %9s  %9s  %-14s  %s\n", "offset ms", "ms", "process", "stage")
		for _, s := range part.stages {
			dur := "·"
			if !s.Point {
				dur = fmt.Sprintf("%.2f", s.DurationMs)
			}
			fmt.Fprintf(w, "    %9.2f  %9s  %-14s  %s\n", s.OffsetMs, dur, s.Process, s.Stage)
		}
	}
}
