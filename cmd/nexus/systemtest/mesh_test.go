package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/platform/proctest"
)

// meshInternalKey is the internal key the mesh tests' services share.
const meshInternalKey = "mesh-internal-key-0123456789abcdef"

// buildNexus builds the nexus binary for one test.
func buildNexus(t *testing.T) string {
	t.Helper()
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string { return proctest.FreeAddr(t) }

// start runs a nexus subcommand as its own process.
func start(t *testing.T, bin string, env []string, args ...string) *proctest.Process {
	t.Helper()
	return proctest.Start(t, bin, strings.Join(args, " "), env, args...)
}

// interrupt sends SIGINT, as Ctrl-C does, and fails the test unless p exits
// cleanly within 5 s.
func interrupt(t *testing.T, p *proctest.Process) time.Duration {
	t.Helper()
	d, err := p.Interrupt(5 * time.Second)
	if err != nil {
		t.Error(err)
	}
	return d
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within 90s", url)
}

func checkHealth(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("health of %s: %v", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health of %s = %v, want SERVING", addr, resp.GetStatus())
	}
}

// TestMesh runs every service as its own process, as a deployment does, and
// checks the foundation: health, the public routes, JSON errors, clean stops.
func TestMesh(t *testing.T) {
	bin := buildNexus(t)
	capAddr, routerAddr, orchAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	peers := []string{
		"NEXUS_CAPABILITY_ADDR=" + capAddr,
		"NEXUS_MODEL_ROUTER_ADDR=" + routerAddr,
		"NEXUS_ORCHESTRATOR_ADDR=" + orchAddr,
		"NEXUS_REDIS_URL=",
		"NEXUS_INTERNAL_KEY=" + meshInternalKey,
	}
	procs := []*proctest.Process{
		start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+capAddr), "capability"),
		start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+routerAddr), "model-router"),
		start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+orchAddr), "orchestrator"),
		start(t, bin, append(peers, "NEXUS_HTTP_ADDR="+httpAddr, "NEXUS_API_KEYS=k-alice:alice"), "gateway"),
	}
	base := "http://" + httpAddr
	waitHTTP(t, base+"/healthz")

	for _, addr := range []string{capAddr, routerAddr, orchAddr} {
		checkHealth(t, addr)
	}
	waitHTTP(t, base+"/readyz")

	tests := []struct {
		method, path string
		wantStatus   int
		wantKey      string
	}{
		{"GET", "/healthz", 200, ""},
		{"GET", "/readyz", 200, ""},
		{"GET", "/v1/models", 200, "models"},
		{"GET", "/v1/hosts", 200, "hosts"},
		{"GET", "/openapi.json", 200, "paths"},
		{"GET", "/v1/no-such-route", 404, "reason"},
		{"GET", "/v1/sessions/no-such-session", 404, "reason"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer k-alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantKey == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
				t.Fatalf("content type = %q, want JSON", ct)
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, body)
			}
			if _, ok := doc[tt.wantKey]; !ok {
				t.Fatalf("body has no %q: %s", tt.wantKey, body)
			}
		})
	}

	// Each peer is reached over one connection, reused: after many calls that
	// cross gateway -> orchestrator -> model-router and capability, each
	// listener has exactly one client connection.
	for range 10 {
		for _, path := range []string{"/v1/models", "/v1/hosts"} {
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			req.Header.Set("Authorization", "Bearer k-alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	for _, peer := range []struct{ name, addr string }{{"orchestrator", orchAddr}, {"model-router", routerAddr}, {"capability", capAddr}} {
		if n := establishedTo(t, peer.addr); n != 1 {
			t.Errorf("%d established connections to the %s at %s, want 1", n, peer.name, peer.addr)
		}
	}

	for _, p := range procs {
		d := interrupt(t, p)
		t.Logf("%s stopped %v after SIGINT", p.Name, d.Round(time.Millisecond))
	}
}

// TestDevStopsOnInterrupt starts the whole stack in one process, as make run
// does, and checks that Ctrl-C stops everything within 5 s.
func TestDevStopsOnInterrupt(t *testing.T) {
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	p := start(t, bin, devEnv(t, httpAddr), "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")

	resp, err := http.Get("http://" + httpAddr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Models []struct {
			ID string `json:"id"`
		} `json:"models"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Models) == 0 {
		t.Fatalf("GET /v1/models from nexus dev: %v, %d models", err, len(models.Models))
	}

	d := interrupt(t, p)
	t.Logf("nexus dev stopped %v after SIGINT", d.Round(time.Millisecond))
}

// devEnv puts every listener of nexus dev on a free port, so tests never meet
// a stack that is already running on the default ones.
func devEnv(t *testing.T, httpAddr string) []string {
	return []string{
		"NEXUS_HTTP_ADDR=" + httpAddr,
		"NEXUS_ORCHESTRATOR_ADDR=" + freeAddr(t),
		"NEXUS_MODEL_ROUTER_ADDR=" + freeAddr(t),
		"NEXUS_CAPABILITY_ADDR=" + freeAddr(t),
		"NEXUS_HOST_ADDR=" + freeAddr(t),
		"NEXUS_REDIS_URL=",
		"NEXUS_DEV_STATE=" + filepath.Join(t.TempDir(), "dev.json"),
		// The data folder holds the database and nexus dev's document; a
		// test's own keeps runs from finding another's walls.
		"NEXUS_DATA_DIR=" + t.TempDir(),
		// nexus dev's logs stay in its output, which a failing test shows.
		"NEXUS_LOG_FILE=/dev/stderr",
	}
}

// dataDir answers the NEXUS_DATA_DIR of a test's environment (the last
// one, as exec uses it).
func dataDir(env []string) string {
	dir := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NEXUS_DATA_DIR="); ok {
			dir = v
		}
	}
	return dir
}

// startDemoDev runs nexus dev with extra in its environment and no vendor
// configured, so its model is the demo's, and answers its HTTP base URL and
// the environment it was started with.
func startDemoDev(t *testing.T, bin string, extra ...string) (base string, env []string) {
	t.Helper()
	httpAddr := freeAddr(t)
	env = append(append(devEnv(t, httpAddr), extra...),
		// The demo model is the default only while no vendor is configured.
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=",
	)
	start(t, bin, env, "dev")
	base = "http://" + httpAddr
	waitHTTP(t, base+"/readyz")
	return base, env
}

// devState reads what the nexus dev started with env wrote for the CLI.
func devState(t *testing.T, env []string) cli.DevState {
	t.Helper()
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NEXUS_DEV_STATE="); ok {
			path = v
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("nexus dev state: %v", err)
	}
	var st cli.DevState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("nexus dev state: %v", err)
	}
	return st
}

// demoPrompt is the prompt the demo model has recorded turns for.
const demoPrompt = "Build a small room: four walls on a level, with a door and a window."

// TestDevThenRun is `make run` in one terminal and `nexus run "<demo prompt>"`
// in another: the demo model's scripts run on the real FreeCAD runtime that
// nexus dev started, a broken script is rolled back and fixed with a line
// edit, and the run completes.
func TestDevThenRun(t *testing.T) {
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := devEnv(t, httpAddr)
	start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	views := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", views, demoPrompt)
	cmd.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL=http://"+httpAddr)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus run: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"using the host runtime paired with nexus dev", // found the dev stack's FreeCAD runtime by itself
		"NameError",             // the deliberate mistake raised on the real host
		"=== CHANGE REPORT ===", // the epilogue ran after the fixed script committed
		"saved to " + filepath.Join(dataDir(env), "freecad", "Nexus.FCStd"), // the commit reached nexus dev's document
		"Wall",
		"Door",
		"Window",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("nexus run output lacks %q:\n%s", want, text)
		}
	}
	// Every view the run rendered is saved as a PNG and its path printed.
	saved := regexp.MustCompile(`saved to (\S+\.png)\]`).FindAllStringSubmatch(text, -1)
	if len(saved) == 0 {
		t.Fatalf("nexus run printed no saved view:\n%s", text)
	}
	t.Logf("nexus run saved %d view(s), the first at %s", len(saved), saved[0][1])
	for _, m := range saved {
		data, err := os.ReadFile(m[1])
		if err != nil || !strings.HasPrefix(m[1], views) || !bytes.HasPrefix(data, []byte("\x89PNG")) {
			t.Errorf("view %s is not a PNG under %s: %v", m[1], views, err)
		}
	}
}

// establishedTo counts this machine's established TCP connections whose
// remote end is addr (127.0.0.1:port), from /proc/net/tcp.
func establishedTo(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	remote := fmt.Sprintf("0100007F:%04X", p)
	n := 0
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == remote && f[3] == "01" {
			n++
		}
	}
	return n
}
