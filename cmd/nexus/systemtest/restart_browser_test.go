package systemtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("needs Chromium at %s (make deps installs it): %v", chromium, err)
	}
	web, err := filepath.Abs("../../../gateway/web")
	if err != nil {
		t.Fatal(err)
	}
	artifacts, err := filepath.Abs("../../../test-artifacts/restart")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), "NEXUS_DATA_DIR="+t.TempDir(),
		// The demo model is the default only while no vendor is configured.
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	base := "http://" + httpAddr
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// Plain node, not node --test, so the test file's process reads this
	// test's answer on its stdin.
	node := exec.CommandContext(ctx, "node", "--test-reporter=spec", "e2e/restart.e2e.mjs")
	node.Dir = web
	node.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL="+base,
		"NEXUS_PAIRING_SECRET="+devState(t, env).PairingSecret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromium,
	)
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
