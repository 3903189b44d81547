package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/telemetry/telemetrytest"
	"nexus.local/services/modelrouter/replay"
)

// failPrompt makes the flaky vendor answer 400, so a run fails at the vendor.
const failPrompt = "Please fail at the vendor."

// flakyVendor stands between the router and the demo's replay server: its
// first call is answered 529 overloaded (a retry), and a request carrying
// failPrompt 400 invalid request (a vendor error); the rest pass through.
type flakyVendor struct {
	calls atomic.Int64
	next  http.Handler
}

func (f *flakyVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	w.Header().Set("Content-Type", "application/json")
	switch {
	case f.calls.Add(1) == 1:
		w.WriteHeader(529)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	case bytes.Contains(body, []byte(failPrompt)):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"this request is refused on purpose"}}`)
	default:
		f.next.ServeHTTP(w, r)
	}
}

// startFlakyVendor serves the demo cassette behind a flakyVendor.
func startFlakyVendor(t *testing.T) string {
	t.Helper()
	cassette, err := replay.LoadCassette("")
	if err != nil {
		t.Fatal(err)
	}
	replayURL, err := replay.NewServer(cassette).Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(replayURL)
	if err != nil {
		t.Fatal(err)
	}
	lis := freeAddr(t)
	srv := &http.Server{Addr: lis, Handler: &flakyVendor{next: httputil.NewSingleHostReverseProxy(u)}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + lis
}

// TestRunMetrics runs the demo through the real services, each its own
// process with its internal listener, and reads what each exports as
// Prometheus text: runs, turns, tokens and cost, tool calls by outcome,
// budget caps, suspended runs and waits, mailbox latency, vendor retries and
// errors, and HTTP metrics labelled by route template only.
func TestRunMetrics(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	vendorURL := startFlakyVendor(t)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	// The demo model gets prices here so its cost is something to check.
	if err := os.WriteFile(catalog, []byte(`models:
  - id: replay/demo
    display_name: Demo (recorded turns)
    context_window: 200000
    max_output_tokens: 16000
    vision_max_px: 1568
    pricing: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
    features: [tools, vision]
  # The same recorded turns in a small context window, so the transcript is
  # summarised before the last turn.
  - id: replay/tiny
    display_name: Demo in a small window
    context_window: 1000
    max_output_tokens: 16000
    features: [tools, vision]
`), 0o600); err != nil {
		t.Fatal(err)
	}

	const token = "pair-metrics"
	host, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Token: token, FreeCADCmd: "freecadcmd", StartTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("start the FreeCAD runtime: %v", err)
	}
	t.Cleanup(func() { _ = host.Stop() })

	capAddr, routerAddr, orchAddr, cappedAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	metricsOf := map[string]string{
		"capability": freeAddr(t), "model-router": freeAddr(t), "orchestrator": freeAddr(t),
		"orchestrator (capped)": freeAddr(t), "gateway": freeAddr(t),
	}
	peers := []string{
		"NEXUS_CAPABILITY_ADDR=" + capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + routerAddr,
		"NEXUS_ORCHESTRATOR_ADDR=" + orchAddr, "NEXUS_REDIS_URL=", "NEXUS_LOG_LEVEL=warn",
		"NEXUS_INTERNAL_KEY=" + meshInternalKey,
	}
	with := func(extra ...string) []string { return append(append([]string(nil), peers...), extra...) }
	start(t, bin, with("NEXUS_GRPC_ADDR="+capAddr, "NEXUS_METRICS_ADDR="+metricsOf["capability"]), "capability")
	start(t, bin, with("NEXUS_GRPC_ADDR="+routerAddr, "NEXUS_METRICS_ADDR="+metricsOf["model-router"],
		"NEXUS_REPLAY_BASE_URL="+vendorURL, "NEXUS_MODEL_CATALOG="+catalog, "NEXUS_MODEL_RETRY_BASE_DELAY=10ms"), "model-router")
	// The CLI calls the orchestrators directly with alice's key.
	start(t, bin, with("NEXUS_GRPC_ADDR="+orchAddr, "NEXUS_METRICS_ADDR="+metricsOf["orchestrator"], "NEXUS_API_KEYS=k-alice:alice"), "orchestrator")
	// A second orchestrator allows no fix, so its run reaches the fix cap.
	start(t, bin, with("NEXUS_GRPC_ADDR="+cappedAddr, "NEXUS_METRICS_ADDR="+metricsOf["orchestrator (capped)"], "NEXUS_MAX_FIX_RETRIES=0", "NEXUS_API_KEYS=k-alice:alice"), "orchestrator")
	start(t, bin, with("NEXUS_HTTP_ADDR="+httpAddr, "NEXUS_METRICS_ADDR="+metricsOf["gateway"], "NEXUS_API_KEYS=k-alice:alice"), "gateway")
	base := "http://" + httpAddr
	waitHTTP(t, base+"/readyz")
	for _, addr := range metricsOf {
		waitHTTP(t, "http://"+addr+"/metrics")
	}

	runDemo := func(t *testing.T, orchestrator, model, prompt string, wantOK bool) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", t.TempDir(), "--model", model, prompt)
		cmd.Env = append(os.Environ(), "NEXUS_ORCHESTRATOR_ADDR="+orchestrator, "NEXUS_HOST_URL="+host.URL(), "NEXUS_HOST_TOKEN="+token,
			"NEXUS_API_KEY=k-alice", "NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "none.json"))
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("nexus run %q: err %v, want success %v\n%s", prompt, err, wantOK, out)
		}
		return string(out)
	}
	out := runDemo(t, orchAddr, "replay/demo", demoPrompt, true)
	if !strings.Contains(out, "NameError") || !strings.Contains(out, "=== CHANGE REPORT ===") {
		t.Fatalf("the demo did not roll back and then commit:\n%s", out)
	}
	runDemo(t, orchAddr, "replay/demo", failPrompt, false)
	// The demo builds its room only in a document without one, so the capped
	// run starts from an empty document again.
	if res, err := host.Client.Execute(t.Context(), &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "empty the document",
		Code: "for o in list(App.ActiveDocument.Objects):\n    App.ActiveDocument.removeObject(o.Name)\n"}); err != nil || !res.GetCommitted() {
		t.Fatalf("empty the document: %v %v", err, res.GetError())
	}
	runDemo(t, cappedAddr, "replay/tiny", demoPrompt, true)

	// The public API, so the gateway's request metrics have routes to show.
	session := createAPISession(t, base)
	for _, path := range []string{"/v1/models", "/v1/sessions/" + session, "/v1/sessions/s_no_such_session", "/v1/no/such/route"} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer k-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// A client sees a run's last chunk a moment before the orchestrator
	// counts the run as ended; wait for the count rather than race it.
	waitMetric(t, metricsOf["orchestrator"], "nexus_runs_ended_total", 2)
	waitMetric(t, metricsOf["orchestrator (capped)"], "nexus_runs_ended_total", 1)
	scrapes := map[string]map[string]*dto.MetricFamily{}
	for name, addr := range metricsOf {
		scrapes[name] = telemetrytest.Scrape(t, addr)
	}
	orch, capped, router, gw := scrapes["orchestrator"], scrapes["orchestrator (capped)"], scrapes["model-router"], scrapes["gateway"]

	// The demo's recorded usage, turn by turn (cassettes/demo.json).
	demo := struct{ turns, input, output, cacheRead float64 }{4, 2140 + 2480 + 640 + 520, 212 + 905 + 180 + 120, 2100 + 3400 + 4100}
	demoCost := (demo.input*3 + demo.output*15 + demo.cacheRead*0.3) / 1e6
	const model = "replay/demo"
	m := map[string]string{"model": model}
	checks := []struct {
		name   string
		fams   map[string]*dto.MetricFamily
		family string
		labels map[string]string
		want   float64
	}{
		{"runs started", orch, "nexus_runs_started_total", m, 2},
		{"run completed", orch, "nexus_runs_ended_total", map[string]string{"model": model, "outcome": "completed", "error_code": ""}, 1},
		{"run failed at the vendor", orch, "nexus_runs_ended_total", map[string]string{"outcome": "failed", "error_code": "invalid_request"}, 1},
		{"turns", orch, "nexus_model_turns_total", m, demo.turns + 1},
		{"time to first token", orch, "nexus_model_time_to_first_token_seconds", m, demo.turns},
		{"turn duration", orch, "nexus_model_turn_duration_seconds", m, demo.turns},
		{"input tokens", orch, "nexus_model_tokens_total", map[string]string{"model": model, "type": "input"}, demo.input},
		{"output tokens", orch, "nexus_model_tokens_total", map[string]string{"model": model, "type": "output"}, demo.output},
		{"cache-read tokens", orch, "nexus_model_tokens_total", map[string]string{"model": model, "type": "cache_read"}, demo.cacheRead},
		{"cache-write tokens", orch, "nexus_model_tokens_total", map[string]string{"model": model, "type": "cache_write"}, 0},
		{"cost", orch, "nexus_model_cost_usd_total", m, demoCost},
		{"data collection", orch, "nexus_tool_calls_total", map[string]string{"tool": "execute_data_collection", "outcome": "ok"}, 1},
		{"rolled back", orch, "nexus_tool_calls_total", map[string]string{"tool": "execute_task_automation", "outcome": "rolled_back"}, 1},
		{"committed", orch, "nexus_tool_calls_total", map[string]string{"tool": "execute_task_automation", "outcome": "committed"}, 1},
		{"no cap reached", orch, "nexus_budget_caps_reached_total", nil, 0},
		{"nothing suspended after the runs", orch, "nexus_runs_suspended", nil, 0},
		{"tool-result waits", orch, "nexus_tool_result_wait_seconds", map[string]string{"outcome": "result"}, 3},
		{"mailbox deliveries", orch, "nexus_mailbox_delivery_latency_seconds", nil, 3},
		{"fix cap reached", capped, "nexus_budget_caps_reached_total", map[string]string{"budget": "fix"}, 1},
		{"fix declined", capped, "nexus_tool_calls_total", map[string]string{"tool": "execute_task_automation", "outcome": "declined"}, 1},
		{"rolled back before the cap", capped, "nexus_tool_calls_total", map[string]string{"tool": "execute_task_automation", "outcome": "rolled_back"}, 1},
		{"nothing committed under the cap", capped, "nexus_tool_calls_total", map[string]string{"outcome": "committed"}, 0},
		{"capped run completed", capped, "nexus_runs_ended_total", map[string]string{"outcome": "completed"}, 1},
		{"no compaction in a large window", orch, "nexus_compactions_total", nil, 0},
		{"local compaction in a small window", capped, "nexus_compactions_total", map[string]string{"kind": "local"}, 1},
		{"vendor retry by status", router, "nexus_vendor_retries_total", map[string]string{"vendor": "replay", "status": "529"}, 1},
		{"vendor error by code", router, "nexus_vendor_errors_total", map[string]string{"vendor": "replay", "code": "invalid_request"}, 1},
		// Each turn is one call: the demo's, the retried one, the failed one.
		{"vendor calls", router, "gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_request_model": "demo"}, demo.turns + 2},
		// The capped run's turns and the summary turn.
		{"vendor calls in the small window", router, "gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_request_model": "tiny"}, demo.turns + 1},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if got := telemetrytest.Value(c.fams, c.family, c.labels); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
			}
		})
	}

	t.Run("routes are templates", func(t *testing.T) {
		routes := telemetrytest.LabelValues(gw, "http_server_request_duration_seconds", "http_route")
		want := map[string]bool{"/v1/sessions": false, "/v1/models": false, "/v1/sessions/{session_id}": false}
		for _, r := range routes {
			if strings.Contains(r, session) || strings.Contains(r, "s_no_such_session") || strings.Contains(r, "/no/such") {
				t.Errorf("route label %q carries a path, not a template", r)
			}
			if _, ok := want[r]; ok {
				want[r] = true
			}
		}
		for r, seen := range want {
			if !seen {
				t.Errorf("no series for route %s; routes %v", r, routes)
			}
		}
	})
	t.Run("no host or peer labels", func(t *testing.T) {
		for name, fams := range scrapes {
			for fam, f := range fams {
				for _, s := range f.GetMetric() {
					for _, l := range s.GetLabel() {
						switch l.GetName() {
						case "server_address", "server_port", "client_address", "network_peer_address", "network_peer_port", "net_host_name", "net_peer_name", "host":
							t.Errorf("%s: %s has label %s=%q", name, fam, l.GetName(), l.GetValue())
						}
					}
				}
			}
		}
	})
	t.Run("the dashboard's metrics are exported", func(t *testing.T) {
		checkMetricList(t, scrapes)
	})
	t.Run("internal listener only", func(t *testing.T) {
		for _, path := range []string{"/metrics", "/debug/pprof/"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("public %s: status %d, want 404", path, resp.StatusCode)
			}
			resp, err = http.Get("http://" + metricsOf["orchestrator"] + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("internal %s: status %d, want 200", path, resp.StatusCode)
			}
		}
	})
}

// waitMetric scrapes addr until family sums to want, or fails after a minute.
func waitMetric(t *testing.T, addr, family string, want float64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := telemetrytest.Value(telemetrytest.Scrape(t, addr), family, nil)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s is %v after a minute, want %v", family, addr, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createAPISession creates a session through the public API.
func createAPISession(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/sessions", strings.NewReader(`{"hostApp":"freecad"}`))
	req.Header.Set("Authorization", "Bearer k-alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.SessionID == "" {
		t.Fatalf("create session: status %d, %v", resp.StatusCode, err)
	}
	return s.SessionID
}

// checkMetricList checks deploy/metrics.txt, the metrics the dashboard and
// the alerts may use, against what the services exported.
func checkMetricList(t *testing.T, scrapes map[string]map[string]*dto.MetricFamily) {
	f, err := os.Open(filepath.Join(repoRoot, "deploy", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		name, labels := fields[0], fields[1:]
		have := map[string]bool{}
		found := false
		for _, fams := range scrapes {
			fam, ok := fams[name]
			if !ok {
				continue
			}
			found = true
			for _, m := range fam.GetMetric() {
				for _, l := range m.GetLabel() {
					have[l.GetName()] = true
				}
			}
		}
		if !found {
			var names []string
			for _, fams := range scrapes {
				for n := range fams {
					if !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") {
						names = append(names, n)
					}
				}
			}
			t.Errorf("deploy/metrics.txt lists %s, which no service exported; they exported %v", name, names)
			continue
		}
		for _, l := range labels {
			if !have[l] {
				t.Errorf("deploy/metrics.txt gives %s the label %s, which it does not have", name, l)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
