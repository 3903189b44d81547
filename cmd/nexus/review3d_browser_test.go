package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestBrowserReview3D drives the 3D review in Chromium against nexus dev
// with the demo model and the real FreeCAD runtime (e2e/review3d.e2e.mjs):
// a preview card opens the model of the would-be state with exactly the
// changed elements highlighted, orbiting changes the picture at 1280 and at
// 390 px with touch, before/after toggles, no WebGL keeps the image, and
// the commit's card opens the committed state.
func TestBrowserReview3D(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("needs Chromium at %s (make deps installs it): %v", chromium, err)
	}
	web, err := filepath.Abs("../../gateway/web")
	if err != nil {
		t.Fatal(err)
	}
	artifacts, err := filepath.Abs("../../test-artifacts")
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
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", "e2e/review3d.e2e.mjs")
	cmd.Dir = web
	cmd.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL=http://"+httpAddr,
		"NEXUS_PAIRING_SECRET="+st.PairingSecret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromium,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test e2e/review3d.e2e.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
