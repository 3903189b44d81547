package systemtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBrowserRestart restarts nexus dev while a demo run awaits review in
// Chromium: the page reloaded on the session's URL shows the session's
// history and the pending review, approving it completes the run on the new
// process, and `nexus sessions` lists the session. Everything lives in the
// SQLite file of one data folder, as for a person whose machine restarts.
func TestBrowserRestart(t *testing.T) {
	t.Parallel()
	d := startDevBrowser(t, "restart")
	bin, env, base, dev := d.bin, d.env, d.gateway, d.dev

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// Plain node, not node --test, so the test file's process reads this
	// test's answer on its stdin.
	node := e2eCommand(ctx, t, base, d.secret, d.artifacts, "--test-reporter=spec", "e2e/restart.e2e.mjs")
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var transcript strings.Builder
	node.Stderr = &transcript
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	// The page says when it is awaiting review; the test then restarts
	// nexus dev and tells the page the new pairing secret.
	var session string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(&transcript, line)
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "restart-now ")
		if !ok {
			continue
		}
		session = rest
		t.Logf("restarting nexus dev while session %s awaits review", session)
		interrupt(t, dev)
		dev = start(t, bin, env, "dev")
		waitHTTP(t, base+"/readyz")
		if _, err := fmt.Fprintln(stdin, devState(t, env).PairingSecret); err != nil {
			t.Fatalf("tell the page the new pairing secret: %v", err)
		}
		// That was the only answer: node may end once its tests have.
		if err := stdin.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := node.Wait(); err != nil {
		t.Fatalf("node --test e2e/restart.e2e.mjs: %v\n%s", err, transcript.String())
	}
	t.Logf("%s", transcript.String())
	if session == "" {
		t.Fatalf("the page never asked for the restart\n%s", transcript.String())
	}

	cli := exec.CommandContext(ctx, bin, "sessions")
	cli.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL=")...)
	out, err := cli.CombinedOutput()
	if err != nil || !strings.Contains(string(out), session) {
		t.Fatalf("nexus sessions after the restart: %v, want session %s listed\n%s", err, session, out)
	}
}
