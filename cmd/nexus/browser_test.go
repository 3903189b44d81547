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
// Chromium through the web UI: the demo's cases (e2e/demo.e2e.mjs), then the
// first screen, the refusals and the choice of host at 1280 and 390 px
// (e2e/first.e2e.mjs). Screenshots land in test-artifacts/demo; with
// NEXUS_UPDATE_README_IMAGE=1 the run also writes the README's picture
// (docs/web-ui.png) from the first screen's demo at 1280 px.
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
	// One file at a time: both drive the one FreeCAD document.
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", "e2e/demo.e2e.mjs", "e2e/first.e2e.mjs")
	cmd.Dir = web
	readme := ""
	if os.Getenv("NEXUS_UPDATE_README_IMAGE") == "1" {
		if readme, err = filepath.Abs("../../docs/web-ui.png"); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Env = append(os.Environ(),
		"NEXUS_README_IMAGE="+readme,
		"NEXUS_GATEWAY_URL=http://"+httpAddr,
		"NEXUS_PAIRING_SECRET="+st.PairingSecret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromium,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test e2e/demo.e2e.mjs e2e/first.e2e.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
