package systemtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBrowserDemo is the product as a person meets it: `make run`'s stack
// (nexus dev, the demo model, the real FreeCAD runtime) driven by headless
// Chromium through the web UI: the demo's cases (e2e/demo.e2e.mjs), then the
// first screen, the refusals and the choice of host at 1280 and 390 px
// (e2e/first.e2e.mjs). Screenshots land in test-artifacts/demo; with
// NEXUS_UPDATE_README_IMAGE=1 the run also writes the README's picture
// (docs/web-ui.png) from the first screen's demo at 1280 px.
func TestBrowserDemo(t *testing.T) {
	t.Parallel()
	d := startDevBrowser(t, "demo")
	readme := ""
	if os.Getenv("NEXUS_UPDATE_README_IMAGE") == "1" {
		var err error
		if readme, err = filepath.Abs(filepath.Join(repoRoot, "docs/web-ui.png")); err != nil {
			t.Fatal(err)
		}
	}
	// One file at a time: both drive the one FreeCAD document.
	t.Logf("%s", d.runE2E(t, []string{"NEXUS_README_IMAGE=" + readme}, "e2e/demo.e2e.mjs", "e2e/first.e2e.mjs"))
}
