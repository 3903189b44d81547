package systemtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/proctest"
)

// TestVersionNamesTheCommit runs nexus version from a binary built in this
// checkout: it names the commit git has checked out, not just "dev".
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command(buildNexus(t), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("nexus version: %v\n%s", err, out)
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("nexus version printed %q, want it to name %q", out, want)
	}
	// A build of a checkout is no release, and says so.
	if !strings.HasPrefix(string(out), "nexus dev build, commit ") {
		t.Errorf("nexus version printed %q, want it to say it is a dev build", out)
	}
	if strings.Contains(string(out), "nexus: nexus:") {
		t.Errorf("nexus version printed %q", out)
	}
}

// TestMakeBuildStampsTheCommit reads the command make build runs (make -n):
// it hands the linker the commit git has checked out.
func TestMakeBuildStampsTheCommit(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command("make", "-n", "-C", repoRoot, "build").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	if want := "-X nexus.local/platform/version.commit=" + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("make build runs\n%s\nwhich does not hand the linker %q", out, want)
	}
}

// TestExitCodes runs command lines that cannot run (exit 2) beside ones that
// run and fail (exit 1), as their own processes.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	env := append(os.Environ(), append(proctest.HoldServicePorts(t), "NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "none.json"),
		"NEXUS_HOST_URL=", "NEXUS_GATEWAY_URL=",
		// The held orchestrator port accepts and never answers: nexus run
		// fails once its connect attempt times out, whatever its length.
		"NEXUS_CONNECT_TIMEOUT=1s")...)
	tests := []struct {
		args []string
		code int
		want []string // text stderr must hold, each
	}{
		{[]string{}, 2, []string{"no command given"}},
		{[]string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{[]string{"sesions"}, 2, []string{`unknown command "sesions" for "nexus"; did you mean sessions?`}},
		{[]string{"run"}, 2, []string{"run: the prompt is empty"}},
		{[]string{"run", "--new-document", "--session", "s_1", "hi"}, 2, []string{"--new-document starts a new session"}},
		{[]string{"run", "--bogus", "hi"}, 2, []string{"unknown flag: --bogus"}},
		{[]string{"run", "hi", "--review", "sometimes"}, 2, []string{`"sometimes" is not a review policy`}},
		{[]string{"run", "hi", "--output", "yaml"}, 2, []string{`"yaml" is not an output format`}},
		{[]string{"run", "--yes", "--review", "every", "hi"}, 2, []string{"--yes reviews nothing"}},
		{[]string{"cancel"}, 2, []string{"accepts 1 arg(s), received 0"}},
		{[]string{"audit", "a", "b"}, 2, []string{"accepts 1 arg(s), received 2"}},
		{[]string{"sessions", "--output"}, 2, []string{"flag needs an argument"}},
		{[]string{"orchestrator", "extra"}, 2, []string{`unknown command "extra"`}},
		{[]string{"host"}, 2, []string{"name the application"}},
		{[]string{"host", "blender"}, 2, []string{`no runtime for "blender"`}},
		{[]string{"dev", "--bogus"}, 2, []string{"dev: unknown flag: --bogus"}},
		{[]string{"dev", "extra"}, 2, []string{`unknown argument "extra"`}},
		{[]string{"bench", "--rate", "x"}, 2, []string{`invalid argument "x" for "--rate" flag`}},
		{[]string{"bench", "--serve-floor", "127.0.0.1:0"}, 2, []string{"--serve-floor needs --vendor-addr"}},
		{[]string{"host", "freecad", "--bogus"}, 2, []string{"host freecad: unknown flag: --bogus"}},
		{[]string{"version", "extra"}, 2, []string{`unknown command "extra"`}},
		{[]string{"eval"}, 2, []string{"--model is required"}},
		{[]string{"eval", "--model", "replay/expert", "--tasks", "zz*"}, 2, []string{`--tasks "zz*" matches none of the`}},
		{[]string{"eval", "--model", "replay/expert", "--concurrency", "99"}, 2, []string{"--concurrency 99: want 1 to 8"}},
		{[]string{"eval", "compare", "missing.json", "other.json"}, 2, []string{"eval compare: read report"}},
		{[]string{"eval", "--model", "replay/expert", "--host-url", "http://127.0.0.1:1"}, 1, []string{"host runtime at http://127.0.0.1:1 cannot be reached"}},
		// A flag after the prompt is a flag, not part of the prompt.
		{[]string{"run", "add a box", "--host-url", "http://127.0.0.1:1"}, 1, []string{"host runtime at http://127.0.0.1:1 cannot be reached"}},
		// With no runtime paired nexus run only watches, and says so; here
		// it then finds no orchestrator either. One run checks both lines:
		// a run waits out its connect timeout against the held orchestrator
		// port, and a second run would only wait it out again.
		{[]string{"run", "add a box"}, 1, []string{"no host runtime paired with nexus run: the session's linked FreeCAD host carries its scripts",
			"create session (orchestrator at"}},
		{[]string{"version"}, 0, []string{""}},
		{[]string{"--version"}, 0, []string{""}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}
