package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserRuntimeRestarted kills the real FreeCAD process (SIGKILL) while
// a script the page carried to it runs: the launcher restarts FreeCAD on the
// last commit, and the page tells the person so in words on the script's
// card, at 1280 px live and at 390 px on the session's URL
// (web/e2e/runtime.e2e.mjs).
func TestBrowserRuntimeRestarted(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "runtime-restart")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// The script marks that it runs, so FreeCAD is killed inside it: the page
	// shows the call running before the request reaches FreeCAD.
	started := filepath.Join(t.TempDir(), "started")
	stack := ot.Start(t, ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_slow", "execute_task_automation", map[string]any{
			"description": "A slow change", "code": "import time\nopen(" + strconv.Quote(started) + ", 'w').close()\nprint('started', flush=True)\ntime.sleep(60)\n"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("FreeCAD restarted while the script ran; nothing of it was kept.")}},
	).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	rt, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Token: "pair-restart", AllowedOrigin: "http://" + gwAddr})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	env := devGatewayEnv(stack, gwAddr, "NEXUS_DEV_HOST_URL", rt.URL(), "NEXUS_DEV_HOST_TOKEN", "pair-restart")
	base := startGatewayAt(t, env, gwAddr)

	killed := false
	out := runE2ECued(t, webDir, "e2e/runtime.e2e.mjs", base, artifacts, 3*testTimeout, map[string]func() string{
		"kill-now": func() string {
			killed = true
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(started); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the slow script never started in FreeCAD")
				}
			}
			if err := syscall.Kill(rt.PID(), syscall.SIGKILL); err != nil {
				t.Fatalf("kill FreeCAD: %v", err)
			}
			return "killed"
		},
	})
	t.Logf("%s", out)
	if !killed {
		t.Fatalf("the page never asked for FreeCAD to be killed\n%s", out)
	}
	if rt.Restarts() < 1 {
		t.Errorf("the launcher restarted FreeCAD %d times, want at least once", rt.Restarts())
	}
}
