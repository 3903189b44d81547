package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/proctest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// sleepScript keeps the real FreeCAD runtime busy, as a long automation does.
const sleepScript = "import time\ntime.sleep(300)\n"

// stalledVendor is a model vendor on loopback that accepts a request and
// never answers, as a slow model does, until the caller gives up.
func stalledVendor(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv.URL
}

// sleepingVendor is a model vendor on loopback whose one turn asks the host
// to run sleepScript.
func sleepingVendor(t *testing.T) string {
	return ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.Text("Waiting on purpose."),
		ot.ToolUse("toolu_sleep", "execute_task_automation", map[string]any{"description": "Sleep", "code": sleepScript})}}).URL
}

// cliProcess is a nexus command running in its own process, its output
// read while it runs.
type cliProcess struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	exited         chan error
}

// startCLI starts bin with args and env; the test's end kills it if it is
// still running.
func startCLI(t *testing.T, bin string, env []string, args ...string) *cliProcess {
	t.Helper()
	p := &cliProcess{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// waitStdout polls stdout until it holds want (the process is then waiting
// there); the test fails when the process ends first or testTimeout passes.
func (p *cliProcess) waitStdout(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(p.stdout.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("nexus never printed %q\nstdout:\n%s\nstderr:\n%s", want, p.stdout.String(), p.stderr.String())
		}
		select {
		case err := <-p.exited:
			t.Fatalf("nexus ended (%v) before it printed %q\nstdout:\n%s\nstderr:\n%s", err, want, p.stdout.String(), p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRunInterrupt is Ctrl-C during `nexus run`, as a process receiving
// SIGINT: the CLI cancels the run explicitly (a run outlives its stream),
// shows the run's terminal chunk, and exits non-zero; the session is left
// with no active run. It is pressed while the model is still writing, then
// while the real FreeCAD runtime runs a script (last: the script keeps the
// shared runtime busy).
func TestRunInterrupt(t *testing.T) {
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	host := startHost(t, "pair-1")
	tests := []struct {
		name string
		// vendor returns the loopback model server of the case.
		vendor func(t *testing.T) string
		// busy is the output line after which the CLI is waiting.
		busy string
	}{
		{"while the model writes", stalledVendor, "model " + ot.Model + " · host FreeCAD"},
		{"while the host runs a script", sleepingVendor, "FreeCAD: running the script..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := ot.Start(t, tt.vendor(t), map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_API_KEYS": cliKey + ":ada"})
			p := startCLI(t, bin, append(os.Environ(), "NEXUS_API_KEY="+cliKey, "NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "none.json")),
				"run", "--addr", stack.Addr, "--host-url", host.URL(), "--host-token", "pair-1", "--yes", "wait a while")
			// Ctrl-C once the run is waiting (polling the output, not sleeping blind).
			p.waitStdout(t, tt.busy)
			if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			var werr error
			select {
			case werr = <-p.exited:
			case <-time.After(testTimeout):
				t.Fatalf("nexus run still running %v after SIGINT\nstdout:\n%s\nstderr:\n%s", testTimeout, p.stdout.String(), p.stderr.String())
			}
			out, errOut := p.stdout.String(), p.stderr.String()
			t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			if code := p.cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit code %d (%v), want 1", code, werr)
			}
			// The run was cancelled explicitly (not left to a closed
			// stream), and the CLI waited for its terminal chunk.
			runID := regexp.MustCompile(`cancelling run (r_\S+)`).FindStringSubmatch(errOut)
			if runID == nil {
				t.Fatalf("stderr does not say which run was cancelled:\n%s", errOut)
			}
			if !strings.Contains(out, "error (cancelled): The run was cancelled.") {
				t.Errorf("stdout lacks the run's terminal chunk:\n%s", out)
			}
			if want := "run interrupted: run " + runID[1] + " ended: cancelled: The run was cancelled."; !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
			// Nothing of the run is left waiting.
			session := regexp.MustCompile(`session (s_\S+)`).FindStringSubmatch(errOut)
			if session == nil {
				t.Fatalf("no session in stderr:\n%s", errOut)
			}
			s, err := stack.Client.GetSession(ot.As(t.Context(), identity.KeyUser("ada")), &agentv1.GetSessionRequest{SessionId: session[1]})
			if err != nil {
				t.Fatal(err)
			}
			if s.GetActiveRunId() != "" || s.GetPendingToolCall() != nil {
				t.Errorf("after the interrupt the session has active run %q and pending call %v, want neither", s.GetActiveRunId(), s.GetPendingToolCall())
			}
		})
	}
}

// TestCancelFromAnotherTerminal is `nexus cancel SESSION` while another
// `nexus run` follows the run with the real FreeCAD runtime busy on its
// script: the follower shows the cancelled error chunk at once (it does not
// wait for the host) and exits 1.
func TestCancelFromAnotherTerminal(t *testing.T) {
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	host := startHost(t, "pair-1")
	stack := ot.Start(t, sleepingVendor(t), map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_API_KEYS": cliKey + ":ada"})
	env := append(os.Environ(), "NEXUS_API_KEY="+cliKey, "NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "none.json"), "NEXUS_GATEWAY_URL=")
	p := startCLI(t, bin, env, "run", "wait a while", "--addr", stack.Addr, "--host-url", host.URL(), "--host-token", "pair-1", "--yes")
	p.waitStdout(t, "FreeCAD: running the script...")
	stdout, stderr := &p.stdout, &p.stderr
	session := regexp.MustCompile(`session (s_\S+)`).FindStringSubmatch(stderr.String())
	if session == nil {
		t.Fatalf("no session in stderr:\n%s", stderr.String())
	}
	cancelCmd := exec.Command(bin, "cancel", session[1], "--addr", stack.Addr)
	cancelCmd.Env = env
	if out, err := cancelCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "cancelled run") {
		t.Fatalf("nexus cancel: %v\n%s", err, out)
	}
	select {
	case <-p.exited:
	case <-time.After(testTimeout):
		t.Fatalf("nexus run still following %v after the cancel (the host sleeps 300 s)\nstdout:\n%s", testTimeout, stdout.String())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), "error (cancelled)") || !strings.Contains(stderr.String(), "failed: cancelled") {
		t.Errorf("the follower does not show the cancel:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
