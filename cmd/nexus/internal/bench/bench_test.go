package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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
	stores := map[string]bool{}
	for _, l := range rep.Levels {
		stores[l.Store] = true
		if l.Errors > 0 || l.Chunks == 0 || l.MeshChunkLatencyMs.P50 <= 0 || l.DirectChunkLatencyMs.P50 <= 0 || l.CPUMicrosPerChunk <= 0 || l.RendezvousMs.P50 <= 0 {
			t.Errorf("level %+v is missing figures", l)
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
		if l.Errors > 0 || l.Calls < max(2, o.HostCalls/l.Hosts)*l.Hosts || l.DeliveryMs.P50 <= 0 || l.DeliveryMs.P99 < l.DeliveryMs.P50 {
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
	if len(rep.CacheReadShare) < o.CacheTurns || rep.CacheReadShareFromTurn3 <= 0 {
		t.Errorf("cache-read shares %v (from turn 3: %v), want one per turn of %d", rep.CacheReadShare, rep.CacheReadShareFromTurn3, o.CacheTurns)
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil || !bytes.Contains(svg.Bytes(), []byte("<polyline")) {
		t.Errorf("chart: %v", err)
	}
	if dir := os.Getenv("NEXUS_TEST_ARTIFACTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "bench.json"), raw, 0o644)
	}
}
