package systemtest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/proctest"
)

// TestDevRestartKeepsAddonReviewInTheGUI is TestDevRestartKeepsAddonReview
// with the add-on itself: FreeCAD's GUI under Xvfb, the add-on installed by
// `nexus host freecad --install-addon` and connected by its Connect command
// (testdata/addon_driver.py), paired by code. nexus dev is stopped with
// Ctrl-C, and then with SIGKILL, while the previewed room awaits review.
func TestDevRestartKeepsAddonReviewInTheGUI(t *testing.T) {
	// Not in parallel: xvfb-run -a takes the first display number
	// whose lock file is missing, so two started together can pick the same.
	for _, tool := range []string{"freecad", "xvfb-run"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the add-on's GUI test needs %s (Debian's freecad and xvfb packages): %v", tool, err)
		}
	}
	bin := buildNexus(t)
	t.Run("interrupt", func(t *testing.T) {
		reviewAcrossRestart(t, bin, startAddonGUI, func(dev *proctest.Process) { interrupt(t, dev) })
	})
	t.Run("kill", func(t *testing.T) {
		reviewAcrossRestart(t, bin, startAddonGUI, func(dev *proctest.Process) { dev.Kill() })
	})
}

// startAddonGUI installs the add-on in a home of its own and starts
// FreeCAD's GUI under Xvfb, which connects it to base: it pairs, keeping
// its token in FreeCAD's user data folder.
func startAddonGUI(t *testing.T, bin, base string) addonRuntime {
	home := t.TempDir()
	install := exec.Command(bin, "host", "freecad", "--install-addon")
	install.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("nexus host freecad --install-addon: %v\n%s", err, out)
	}
	gui := startAddonDriver(t, home, t.TempDir(), base)
	out := gui.out
	read := func() addonState { return gui.read(t) }
	tokenFile := func() string {
		found := ""
		_ = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "host-token" && filepath.Base(filepath.Dir(path)) == "Nexus" {
				found = path
			}
			return nil
		})
		return found
	}
	census := func() []string {
		// What the window shows once no script runs, written after asked.
		asked := float64(time.Now().UnixNano()) / 1e9
		var s addonState
		waitFor(t, "the add-on's document, with no script running", guiPatience, func() bool {
			s = read()
			return s.Written > asked && !s.Running
		})
		return s.Objects
	}
	// The add-on logs each line of its link twice, in FreeCAD's report view
	// ("Nexus: ") and on stdout ("nexus addon: "): the link's are the latter.
	linkLog := func() string {
		read()
		var b strings.Builder
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "nexus addon: ") {
				b.WriteString(line + "\n")
			}
		}
		return b.String()
	}
	return addonRuntime{output: linkLog, tokenFile: tokenFile, census: census}
}
