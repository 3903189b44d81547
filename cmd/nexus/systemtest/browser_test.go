package systemtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	d := startDevBrowser(t, "demo")
	readme := ""
	if os.Getenv("NEXUS_UPDATE_README_IMAGE") == "1" {
		var err error
		if readme, err = filepath.Abs("../../../docs/web-ui.png"); err != nil {
			t.Fatal(err)
		}
	}
	// One file at a time: both drive the one FreeCAD document.
	t.Logf("%s", d.runE2E(t, []string{"NEXUS_README_IMAGE=" + readme}, "e2e/demo.e2e.mjs", "e2e/first.e2e.mjs"))
}

// devBrowser is a nexus dev (the demo model, the real FreeCAD runtime) for
// the web UI's end-to-end files in headless Chromium.
type devBrowser struct {
	bin, web, artifacts string
	// env is nexus dev's environment; the CLI finds it through it.
	env []string
	// gateway is its HTTP base URL, secret the pairing secret its printed
	// URL carries.
	gateway, secret string
}

// chromiumPath is Debian's Chromium, which make deps installs.
const chromiumPath = "/usr/bin/chromium"

// startDevBrowser starts nexus dev for a browser test whose screenshots go
// to test-artifacts/<name>.
func startDevBrowser(t *testing.T, name string) devBrowser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("needs Chromium at %s (make deps installs it): %v", chromiumPath, err)
	}
	web, err := filepath.Abs("../../../gateway/web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("gateway/web/node_modules lacks playwright-core: run make deps: %v", err)
	}
	artifacts, err := filepath.Abs(filepath.Join("../../../test-artifacts", name))
	if err != nil {
		t.Fatal(err)
	}
	d := devBrowser{bin: buildNexus(t), web: web, artifacts: artifacts}
	httpAddr := freeAddr(t)
	d.env, d.gateway = devEnv(t, httpAddr), "http://"+httpAddr
	start(t, d.bin, d.env, "dev")
	waitHTTP(t, d.gateway+"/readyz")
	d.secret = devState(t, d.env).PairingSecret
	return d
}

// runE2E runs the e2e files against d, one at a time (they drive the one
// FreeCAD document), and answers their output; a failure fails t.
func (d devBrowser) runE2E(t *testing.T, extra []string, files ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)...)
	cmd.Dir = d.web
	cmd.Env = append(append(os.Environ(),
		"NEXUS_GATEWAY_URL="+d.gateway,
		"NEXUS_PAIRING_SECRET="+d.secret,
		"NEXUS_ARTIFACTS="+d.artifacts,
		"CHROMIUM_PATH="+chromiumPath,
	), extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	return string(out)
}
