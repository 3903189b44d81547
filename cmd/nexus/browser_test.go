package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestBrowserDemo is the product as a person meets it: `make run`'s stack
// (nexus dev, the demo model, the real FreeCAD runtime) driven by headless
// Chromium through the web UI. Screenshots land in test-artifacts/demo.
func TestBrowserDemo(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("needs Chromium at %s (make deps installs it): %v", chromium, err)
	}
	web, err := filepath.Abs("../../gateway/web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("gateway/web/node_modules lacks playwright-core: run make deps: %v", err)
	}
	artifacts, err := filepath.Abs("../../test-artifacts/demo")
	if err != nil {
		t.Fatal(err)
	}

	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := devEnv(t, httpAddr)
	start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	st := devState(t, env)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "e2e/demo.e2e.mjs")
	cmd.Dir = web
	cmd.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL=http://"+httpAddr,
		"NEXUS_PAIRING_SECRET="+st.PairingSecret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromium,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test e2e/demo.e2e.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
