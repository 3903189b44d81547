package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"nexus.local/cmd/nexus/internal/bench"
	"nexus.local/platform/proctest"
)

// TestShortBench runs nexus bench in its short form against nexus dev, with
// the in-process store and with Redis, and checks that the JSON report holds
// every figure. The figures are printed, never asserted: targets belong to
// the full run on a quiet machine.
func TestShortBench(t *testing.T) {
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Short()
	o.Binary, o.RedisURL = bin, "auto"
	rep, err := bench.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	t.Log("\n" + table.String())

	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	// The machine and the settings are what this run had, read back from
	// the JSON a reader of docs/bench.json gets.
	var doc struct {
		GoVersion string            `json:"go_version"`
		Cores     int               `json:"cores"`
		Settings  map[string]string `json:"settings"`
		HostLink  []map[string]any  `json:"host_link"`
		Levels    []struct {
			MessagesPerChunk map[string]float64 `json:"messages_per_chunk"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.GoVersion != runtime.Version() || doc.Cores != runtime.NumCPU() {
		t.Errorf("report machine: go %q, %d cores; want %q, %d", doc.GoVersion, doc.Cores, runtime.Version(), runtime.NumCPU())
	}
	if got, want := doc.Settings["rate_per_stream"], strconv.Itoa(o.Rate); got != want {
		t.Errorf("settings rate_per_stream = %q, want %q", got, want)
	}
	if got, want := doc.Settings["concurrency"], fmt.Sprint(o.Concurrency); got != want {
		t.Errorf("settings concurrency = %q, want %q", got, want)
	}
	for _, l := range doc.Levels {
		if len(l.MessagesPerChunk) != 4 {
			t.Errorf("a level's JSON has messages per chunk %v, want the four hops", l.MessagesPerChunk)
		}
	}
	stores := map[string]bool{}
	for _, l := range rep.Levels {
		stores[l.Store] = true
		if l.Errors > 0 || l.Chunks == 0 || l.MeshChunkLatencyMs.P50 <= 0 || l.DirectChunkLatencyMs.P50 <= 0 || l.CPUMicrosPerChunk <= 0 || l.RendezvousMs.P50 <= 0 ||
			l.MeshFirstChunkLatencyMs.P50 <= 0 || l.DirectFirstChunkLatencyMs.P50 <= 0 || l.CPUFloorMultiple <= 0 {
			t.Errorf("level %+v is missing figures", l)
		}
		// Messages per chunk at every hop: each hop sent something.
		if h := l.MessagesPerChunk; h == nil || h.RouterToOrchestrator <= 0 || h.OrchestratorToGateway <= 0 || h.SSEWrites <= 0 || h.StoreAppends <= 0 {
			t.Errorf("%s at %d streams: messages per chunk %+v, want a figure at every hop", l.Store, l.Streams, h)
		}
	}
	if !stores["memory"] || !stores["redis"] {
		t.Errorf("levels measured stores %v, want memory and redis", stores)
	}
	for _, s := range rep.Stores {
		if s.RendezvousMs.P50 <= 0 || s.SustainedStreams <= 0 || s.HeapNote != "" {
			t.Errorf("store %+v is missing figures", s)
		}
	}
	// Host-link delivery at every number of hosts, for both stores.
	linked := map[string]bool{}
	for _, l := range rep.HostLink {
		linked[fmt.Sprint(l.Store, l.Hosts)] = true
		if l.Errors > 0 || l.Calls < max(2, o.HostCalls/l.Hosts)*l.Hosts || l.DeliveryMs.P50 <= 0 || l.DeliveryMs.P99 < l.DeliveryMs.P50 || l.CallsPerSecond != o.HostCallRate {
			t.Errorf("host-link level %+v is missing figures", l)
		}
	}
	for _, store := range []string{"memory", "redis"} {
		for _, n := range o.Hosts {
			if !linked[fmt.Sprint(store, n)] {
				t.Errorf("host-link delivery was not measured at %d hosts with the %s store", n, store)
			}
		}
	}
	if len(doc.HostLink) != len(rep.HostLink) || len(doc.HostLink) == 0 || doc.HostLink[0]["delivery_ms"] == nil {
		t.Errorf("the JSON report's host_link is %v, want a delivery_ms per level", doc.HostLink)
	}
	if got, want := doc.Settings["hosts"], fmt.Sprint(o.Hosts); got != want {
		t.Errorf("settings hosts = %q, want %q", got, want)
	}
	if got, want := doc.Settings["host_call_rate"], strconv.Itoa(o.HostCallRate); got != want {
		t.Errorf("settings host_call_rate = %q, want %q", got, want)
	}
	if len(rep.CacheReadShare) < o.CacheTurns || rep.CacheReadShareFromTurn3 <= 0 {
		t.Errorf("cache-read shares %v (from turn 3: %v), want one per turn of %d", rep.CacheReadShare, rep.CacheReadShareFromTurn3, o.CacheTurns)
	}
	// The reference proxy ran at every concurrency the mesh did, and its
	// figures are in the JSON beside the mesh's.
	type referenceDoc struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Levels  []struct {
			Streams int     `json:"streams"`
			Chunks  int     `json:"chunks"`
			CPU     float64 `json:"cpu_us_per_chunk"`
			Errors  int     `json:"errors"`
			Added   struct {
				P50 *float64 `json:"p50"`
				P99 *float64 `json:"p99"`
			} `json:"added_chunk_latency_ms"`
			Mesh struct {
				P50 float64 `json:"p50"`
			} `json:"mesh_chunk_latency_ms"`
			Direct struct {
				P50 float64 `json:"p50"`
			} `json:"direct_chunk_latency_ms"`
			FloorMultiple float64 `json:"cpu_floor_multiple"`
		} `json:"levels"`
	}
	// The floor relay (the mesh's hops with none of its work) ran the same
	// way, and the table reads the mesh's CPU above it.
	var refDoc struct {
		Reference *referenceDoc `json:"reference"`
		Floor     *referenceDoc `json:"floor"`
	}
	if err := json.Unmarshal(raw, &refDoc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name string
		ref  *referenceDoc
	}{{"nginx", refDoc.Reference}, {"floor", refDoc.Floor}} {
		switch ref := want.ref; {
		case ref == nil:
			t.Errorf("the report has no %s figures", want.name)
		case ref.Name != want.name || ref.Version == "" || len(ref.Levels) != len(o.Concurrency):
			t.Errorf("reference %s %q measured %d levels, want %s with a version at %d", ref.Name, ref.Version, len(ref.Levels), want.name, len(o.Concurrency))
		default:
			for i, l := range ref.Levels {
				if l.Streams != o.Concurrency[i] || l.Errors > 0 || l.Chunks == 0 || l.CPU <= 0 || l.Added.P50 == nil || l.Added.P99 == nil || l.Mesh.P50 <= 0 || l.Direct.P50 <= 0 || l.FloorMultiple <= 0 {
					t.Errorf("%s level %d: %+v is missing figures", want.name, i, l)
				}
			}
		}
	}
	// No table shows a p50 above its p99 or a p99 above its max.
	if wrong, groups := tableOrder(table.String()); len(wrong) > 0 || groups == 0 {
		t.Errorf("the tables show %q (%d p50-p99 groups checked)", wrong, groups)
	}
	for _, want := range []string{"nginx (reference)", "as a multiple of nginx's", "floor (hops only)", "above the floor's",
		"direct p50", "added p50", "first path p50", "x floor", "router->orchestrator", "orchestrator->gateway", "SSE writes", "store appends"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table does not show %q:\n%s", want, table.String())
		}
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil || !bytes.Contains(svg.Bytes(), []byte("<polyline")) || !bytes.Contains(svg.Bytes(), []byte(">nginx p99<")) || !bytes.Contains(svg.Bytes(), []byte(">floor p99<")) {
		t.Errorf("chart without the mesh's, the reference's and the floor's lines: %v", err)
	}
	if dir := os.Getenv("NEXUS_TEST_ARTIFACTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "bench.json"), raw, 0o644)
	}
}
