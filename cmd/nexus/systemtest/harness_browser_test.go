package systemtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/proctest"
)

// chromiumPath is Debian's Chromium, which make deps installs.
const chromiumPath = "/usr/bin/chromium"

// devBrowser is a nexus dev (the demo model, the real FreeCAD runtime) for
// the web UI's end-to-end files in headless Chromium.
type devBrowser struct {
	bin, web, artifacts string
	// env is nexus dev's environment; the CLI finds it through it.
	env []string
	// gateway is its HTTP base URL, secret the pairing secret its printed
	// URL carries.
	gateway, secret string
	// dev is the nexus dev process.
	dev *proctest.Process
}

// startDevBrowser starts nexus dev for a browser test whose screenshots go
// to test-artifacts/<name>.
func startDevBrowser(t *testing.T, name string) devBrowser {
	t.Helper()
	web := webDir(t)
	d := devBrowser{bin: buildNexus(t), web: web, artifacts: repoPath(t, filepath.Join("test-artifacts", name))}
	httpAddr := freeAddr(t)
	d.env, d.gateway = append(devEnv(t, httpAddr), demoModelEnv()...), "http://"+httpAddr
	d.dev = start(t, d.bin, d.env, "dev")
	waitHTTP(t, d.gateway+"/readyz")
	d.secret = devState(t, d.env).PairingSecret
	return d
}

// webDir answers the web UI's folder once it has what the end-to-end files
// need: Chromium and playwright-core.
func webDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("needs Chromium at %s (make deps installs it): %v", chromiumPath, err)
	}
	web := repoPath(t, "gateway/web")
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("gateway/web/node_modules lacks playwright-core: run make deps: %v", err)
	}
	return web
}

// e2eCommand is node with args in the web UI's folder, told the gateway,
// its pairing secret, where screenshots go and where Chromium is.
func e2eCommand(ctx context.Context, t *testing.T, gateway, secret, artifacts string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = webDir(t)
	cmd.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL="+gateway,
		"NEXUS_PAIRING_SECRET="+secret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromiumPath,
	)
	return cmd
}

// runE2E runs the e2e files against d, one at a time (they drive the one
// FreeCAD document), and answers their output; a failure fails t.
func (d devBrowser) runE2E(t *testing.T, extra []string, files ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := e2eCommand(ctx, t, d.gateway, d.secret, d.artifacts, append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)...)
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	return string(out)
}
