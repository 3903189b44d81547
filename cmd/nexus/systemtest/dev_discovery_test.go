package systemtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDevRunning runs the client commands with no address given and no
// nexus dev running (no state file, or one a killed nexus dev left): each
// says so once, names what to do, and exits 2 before it starts anything.
// nexus eval given an address nobody answers at says so once too, instead
// of once per task.
func TestNoDevRunning(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.json")
	// A process that has ended: its id names nobody now.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"pid": done.ProcessState.Pid(), "orchestratorAddr": "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, b, 0o600); err != nil {
		t.Fatal(err)
	}
	base := append(os.Environ(), "NEXUS_ORCHESTRATOR_ADDR=", "NEXUS_GATEWAY_URL=", "NEXUS_HOST_URL=", "NEXUS_HOST_TOKEN=")
	for _, state := range []struct{ name, path, want string }{
		{"no state file", filepath.Join(dir, "none.json"), "no nexus dev is running for this user (it writes " + filepath.Join(dir, "none.json")},
		{"a state file left by a killed nexus dev", stale, fmt.Sprintf("names process %d, which has ended", done.ProcessState.Pid())},
	} {
		env := append(append([]string{}, base...), "NEXUS_DEV_STATE="+state.path)
		for _, args := range [][]string{{"sessions"}, {"run", "add a box"}, {"eval", "--model", "replay/expert"}, {"audit", "s_1"}, {"cancel", "s_1"}, {"hosts"}} {
			t.Run(state.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				code, stdout, stderr := runNexus(t, bin, env, args...)
				if code != 2 {
					t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				if n := strings.Count(stderr, state.want); n != 1 {
					t.Errorf("stderr says %q %d times, want once:\n%s", state.want, n, stderr)
				}
				if !strings.Contains(stderr, "name a running Nexus with --addr or --gateway") || strings.Contains(stderr, "starting") {
					t.Errorf("stderr does not say what to do, or started something:\n%s", stderr)
				}
			})
		}
	}
	t.Run("eval at an address nobody answers at", func(t *testing.T) {
		code, stdout, stderr := runNexus(t, bin, append(base, "NEXUS_DEV_STATE="+filepath.Join(dir, "none.json")),
			"eval", "--model", "replay/expert", "--addr", "127.0.0.1:1", "--report", t.TempDir())
		if code != 2 || strings.Count(stderr, "connection refused") != 1 || !strings.Contains(stderr, "no Nexus answers") || strings.Contains(stderr, "starting") {
			t.Errorf("exit %d, want 2 and one line saying no Nexus answers, before any runtime starts\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// TestOneDevPerDataFolder starts nexus dev on a data folder, then a second
// one on the same folder (other ports): the second says which process holds
// the folder and exits non-zero. A third on another folder runs beside the
// first. The client commands find the first from its state file whatever
// ports it took, and say none runs once it stopped.
func TestOneDevPerDataFolder(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), "NEXUS_DEV_NO_HOST=true")
	first := start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")

	second := append(devEnv(t, freeAddr(t)), "NEXUS_DEV_NO_HOST=true", "NEXUS_DATA_DIR="+dataDir(env))
	code, stdout, stderr := runNexus(t, bin, append(os.Environ(), second...), "dev")
	want := fmt.Sprintf("the data folder %s is in use by another nexus dev (process %d, running at http://%s since", dataDir(env), first.PID(), httpAddr)
	if code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("a second nexus dev on the same data folder exited %d, want non-zero saying %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	if strings.Contains(stdout, "nexus is running") {
		t.Errorf("the second nexus dev said it is running:\n%s", stdout)
	}
	if !first.Running() {
		t.Fatal("the first nexus dev stopped")
	}

	// A nexus dev on another folder runs beside it.
	other := append(devEnv(t, freeAddr(t)), "NEXUS_DEV_NO_HOST=true")
	third := start(t, bin, other, "dev")
	waitHTTP(t, "http://"+envValue(other, "NEXUS_HTTP_ADDR")+"/readyz")
	interrupt(t, third)

	// The client knows nothing but the state file of the first.
	cli := append(os.Environ(), "NEXUS_ORCHESTRATOR_ADDR=", "NEXUS_GATEWAY_URL=", "NEXUS_DEV_STATE="+envValue(env, "NEXUS_DEV_STATE"))
	code, stdout, stderr = runNexus(t, bin, cli, "sessions")
	if code != 0 || !strings.Contains(stdout, "SESSION") {
		t.Errorf("nexus sessions with only the state file of nexus dev exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	interrupt(t, first)
	if _, err := os.Stat(envValue(env, "NEXUS_DEV_STATE")); !os.IsNotExist(err) {
		t.Errorf("nexus dev left its state file behind: %v", err)
	}
	code, _, stderr = runNexus(t, bin, cli, "sessions")
	if code != 2 || !strings.Contains(stderr, "no nexus dev is running") {
		t.Errorf("nexus sessions after nexus dev stopped exited %d, want 2 saying none runs:\n%s", code, stderr)
	}
}
