package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	driver, err := filepath.Abs("testdata/addon_driver.py")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	install := exec.Command(bin, "host", "freecad", "--install-addon")
	install.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("nexus host freecad --install-addon: %v\n%s", err, out)
	}
	state := t.TempDir()
	gui := exec.Command("xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", "freecad", driver)
	gui.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=", "XDG_RUNTIME_DIR="+t.TempDir(),
		// FreeCAD's start page embeds Chromium, which refuses to run as
		// root inside its sandbox and takes the whole GUI down with it.
		"QTWEBENGINE_DISABLE_SANDBOX=1",
		"NEXUS_DRIVER_DIR="+state, "NEXUS_DRIVER_ARTIFACTS="+t.TempDir(), "NEXUS_DRIVER_URL="+base)
	out := &lockedBuffer{}
	gui.Stdout, gui.Stderr = out, out
	// Its own process group: xvfb-run, Xvfb and FreeCAD all end with the test.
	gui.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := gui.Start(); err != nil {
		t.Fatalf("start FreeCAD: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = gui.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-gui.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-gui.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("FreeCAD's output:\n%s", out)
		}
	})
	read := func() addonState {
		select {
		case <-exited:
			t.Fatalf("FreeCAD exited:\n%s", out)
		default:
		}
		var s addonState
		b, err := os.ReadFile(filepath.Join(state, "state.json"))
		if err == nil && json.Unmarshal(b, &s) == nil && s.Error != "" {
			t.Fatalf("the driver failed in FreeCAD:\n%s", s.Error)
		}
		return s
	}
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
