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

	"nexus.local/platform/proctest"
)

// TestMesh runs every service as its own process, as a deployment does, and
// checks the foundation: health, the public routes, JSON errors, clean stops.
func TestMesh(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestDevThenRun is `make run` in one terminal and `nexus run "<demo prompt>"`
// in another: the demo model's scripts run on the real FreeCAD runtime that
// nexus dev started, a broken script is rolled back and fixed with a line
// edit, and the run completes.
func TestDevThenRun(t *testing.T) {
	t.Parallel()
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
