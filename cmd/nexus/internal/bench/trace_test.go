package bench_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"nexus.local/cmd/nexus/internal/bench"
	"nexus.local/platform/proctest"
)

// TestTraceOrdersTheStages traces one run of a small level with each store
// and checks that its stages are there in the order one causes the next:
// for the first chunk the gateway's request, the orchestrator's worker, the
// model router's call, the vendor's receipt of the request and the client's
// read of the first delta; for the rendezvous the result POST, the
// gateway's request, the orchestrator's delivery, its worker again, the
// model router's call and the vendor's next request. With Redis the trace
// holds the orchestrator's round trips to it. Times are read for their
// order only.
func TestTraceOrdersTheStages(t *testing.T) {
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Options{Binary: bin, Concurrency: []int{2}, Rate: 50, MaxStreams: 2, Trace: 2, RedisURL: "auto"}
	rep, err := bench.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	t.Log("\n" + table.String())

	type step struct {
		what    string
		process string
		match   func(string) bool
	}
	is := func(name string) func(string) bool { return func(s string) bool { return s == name } }
	prefix := func(p string) func(string) bool { return func(s string) bool { return strings.HasPrefix(s, p) } }
	suffix := func(p string) func(string) bool { return func(s string) bool { return strings.HasSuffix(s, p) } }
	firstChunk := []step{
		{"the client's start POST", "bench client", is("start POST sent")},
		{"the gateway's request", "gateway", is("POST /v1/sessions/{id}/runs")},
		{"the orchestrator's worker", "orchestrator", prefix("invoke_agent")},
		{"the model router's call", "model-router", prefix("chat ")},
		{"the vendor's receipt", "bench vendor", is("model request received")},
		{"the client's read of the first delta", "bench client", is("first delta read")},
	}
	rendezvous := []step{
		{"the client's result POST", "bench client", is("result POST sent")},
		{"the gateway's request", "gateway", is("POST /v1/sessions/{id}/tool-results")},
		{"the orchestrator's delivery", "orchestrator", suffix("/SubmitToolResult")},
		{"the orchestrator's worker", "orchestrator", prefix("invoke_agent")},
		{"the model router's call", "model-router", prefix("chat ")},
		{"the vendor's next request", "bench vendor", is("next model request received")},
	}
	// inOrder finds each step's first stage after the previous step's.
	inOrder := func(store, part string, stages []bench.Stage, steps []step) {
		at := 0
		for _, s := range steps {
			found := false
			for ; at < len(stages) && !found; at++ {
				found = stages[at].Process == s.process && s.match(stages[at].Stage)
			}
			if !found {
				t.Errorf("%s, %s: no stage of %s after the stages before it in %+v", store, part, s.what, stages)
				return
			}
		}
	}
	traced := map[string]bool{}
	for _, l := range rep.Levels {
		tr := l.Trace
		if tr == nil {
			t.Errorf("%s at %d streams: no trace", l.Store, l.Streams)
			continue
		}
		traced[l.Store] = true
		if tr.Error != "" || tr.FirstChunkMs <= 0 || tr.RendezvousMs <= 0 {
			t.Errorf("%s: trace %+v is not whole", l.Store, tr)
		}
		// What the cores and the scheduler did is there beside the stages.
		if tr.Sched.Wakeups <= 0 || tr.FirstChunkCPU.MeshMs <= 0 || tr.RendezvousCPU.MeshMs <= 0 {
			t.Errorf("%s: the trace lacks the scheduler's or the cores' figures: %+v %+v %+v", l.Store, tr.Sched, tr.FirstChunkCPU, tr.RendezvousCPU)
		}
		inOrder(l.Store, "first chunk", tr.FirstChunk, firstChunk)
		inOrder(l.Store, "rendezvous", tr.Rendezvous, rendezvous)
		if l.Store != "redis" {
			continue
		}
		for part, stages := range map[string][]bench.Stage{"first chunk": tr.FirstChunk, "rendezvous": tr.Rendezvous} {
			store := false
			for _, s := range stages {
				store = store || (s.Process == "orchestrator" && strings.HasPrefix(s.Stage, "redis "))
			}
			if !store {
				t.Errorf("redis, %s: no round trip to Redis in %+v", part, stages)
			}
		}
	}
	if !traced["memory"] || !traced["redis"] {
		t.Errorf("traced stores %v, want memory and redis", traced)
	}
	if !strings.Contains(table.String(), "trace of one run, redis, 2 streams") {
		t.Errorf("the table does not print the trace:\n%s", table.String())
	}
}
