package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// repoRoot is the repository's root, seen from this package's folder, where
// go test runs its tests.
const repoRoot = "../../.."

// repoPath answers the absolute path of rel, a path in the repository.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// built is the nexus binary this test process built: every test runs the
// same build of the checkout, and the link is paid once.
var built struct {
	sync.Mutex
	dir, bin string
}

// TestMain removes the binary the tests shared once they have all ended.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildNexus answers the nexus binary built from this checkout (cmd/nexus),
// building it on first use. Each test gets its own hard link to the one
// build in a folder of its own, so no test's clean-up can take another's
// binary away; a build found gone is built again.
func buildNexus(t *testing.T) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.bin != "" {
		if _, err := os.Stat(built.bin); err != nil {
			t.Logf("the shared nexus binary %s is gone (%v); building it again", built.bin, err)
			built.bin = ""
		}
	}
	if built.bin == "" {
		dir, err := os.MkdirTemp("", "nexus-systemtest-")
		if err != nil {
			t.Fatal(err)
		}
		bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(dir, "nexus"))
		if err != nil {
			t.Fatal(err)
		}
		if built.dir != "" {
			_ = os.RemoveAll(built.dir)
		}
		built.dir, built.bin = dir, bin
	}
	own := filepath.Join(t.TempDir(), "nexus")
	if err := os.Link(built.bin, own); err != nil {
		b, err := os.ReadFile(built.bin)
		if err == nil {
			err = os.WriteFile(own, b, 0o755)
		}
		if err != nil {
			t.Fatalf("give the test its nexus binary: %v", err)
		}
	}
	return own
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
	// A service answers NOT_SERVING until it is ready (its peers reached):
	// wait for SERVING, and fail on anything else once the minute is up.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatalf("health of %s: %v", addr, err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("health of %s = %v after a minute, want SERVING", addr, resp.GetStatus())
		case <-time.After(50 * time.Millisecond):
		}
	}
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

// demoModelEnv clears every vendor's setting: the demo model is nexus dev's
// default only while no vendor is configured.
func demoModelEnv() []string {
	return []string{"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL="}
}

// envValue answers key's value in a test's environment: the last one, as
// exec uses it.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// dataDir answers the NEXUS_DATA_DIR of a test's environment.
func dataDir(env []string) string { return envValue(env, "NEXUS_DATA_DIR") }

// startDemoDev runs nexus dev with extra in its environment and no vendor
// configured, so its model is the demo's, and answers its HTTP base URL and
// the environment it was started with.
func startDemoDev(t *testing.T, bin string, extra ...string) (base string, env []string) {
	t.Helper()
	httpAddr := freeAddr(t)
	env = append(append(devEnv(t, httpAddr), extra...), demoModelEnv()...)
	start(t, bin, env, "dev")
	base = "http://" + httpAddr
	waitHTTP(t, base+"/readyz")
	return base, env
}

// devState reads what the nexus dev started with env wrote for the CLI.
func devState(t *testing.T, env []string) cli.DevState {
	t.Helper()
	b, err := os.ReadFile(envValue(env, "NEXUS_DEV_STATE"))
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

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startDev runs nexus dev with its FreeCAD runtime and the demo model, and
// answers the environment a CLI of the same person has.
func startDev(t *testing.T, bin string, extra ...string) []string {
	t.Helper()
	_, env := startDemoDev(t, bin, extra...)
	return append(os.Environ(), append(env, "NEXUS_GATEWAY_URL=", "NEXUS_HOST_URL=", "NEXUS_HOST_TOKEN=", "VISUAL=",
		"NEXUS_VIEWS_DIR="+t.TempDir())...)
}

// devHost is nexus dev's FreeCAD runtime as a courier reaches it.
func devHost(t *testing.T, env []string) *cli.Host {
	t.Helper()
	st := devState(t, env)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, st.GatewayURL+"/v1/dev/host-pairing", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Nexus-Pairing-Secret", st.PairingSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ HostURL, HostToken string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return &cli.Host{URL: p.HostURL, Token: p.HostToken}
}

// devWithVendor starts nexus dev (no host of its own) with the scripted
// vendor at vendorURL as Anthropic's: its base URL and environment.
func devWithVendor(t *testing.T, bin, vendorURL string) (string, []string) {
	t.Helper()
	httpAddr := freeAddr(t)
	base := "http://" + httpAddr
	env := append(devEnv(t, httpAddr), "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL="+vendorURL,
		"OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	start(t, bin, env, "dev", "--no-host")
	waitHTTP(t, base+"/readyz")
	return base, env
}

// devDocumentName is the document nexus dev keeps in its data folder when no
// --document is given, as a person finds it there and downloads it.
const devDocumentName = "Nexus.FCStd"

// runNexus runs one nexus command line to its end and answers its exit code
// and output.
func runNexus(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}
