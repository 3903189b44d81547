package systemtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// addonGUI is FreeCAD's GUI under Xvfb running the add-on's test driver
// (testdata/addon_driver.py), which presses the add-on's own commands and
// writes what the window shows to state.json.
type addonGUI struct {
	out    *lockedBuffer
	exited chan struct{}
	state  string
	mu     sync.Mutex
	last   addonState
}

// startAddonDriver starts FreeCAD's GUI with the add-on installed in home,
// its driver connecting it to base and saving screenshots to artifacts.
// FreeCAD and its Xvfb end with the test.
func startAddonDriver(t *testing.T, home, artifacts, base string) *addonGUI {
	t.Helper()
	driver, err := filepath.Abs("testdata/addon_driver.py")
	if err != nil {
		t.Fatal(err)
	}
	g := &addonGUI{out: &lockedBuffer{}, exited: make(chan struct{}), state: t.TempDir()}
	gui := exec.Command("xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", "freecad", driver)
	gui.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=", "XDG_RUNTIME_DIR="+t.TempDir(),
		// FreeCAD's start page embeds Chromium, which refuses to run as
		// root inside its sandbox and takes the whole GUI down with it.
		"QTWEBENGINE_DISABLE_SANDBOX=1",
		"NEXUS_DRIVER_DIR="+g.state, "NEXUS_DRIVER_ARTIFACTS="+artifacts, "NEXUS_DRIVER_URL="+base)
	gui.Stdout, gui.Stderr = g.out, g.out
	// Its own process group: xvfb-run, Xvfb and FreeCAD all end with the test.
	gui.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := gui.Start(); err != nil {
		t.Fatalf("start FreeCAD: %v", err)
	}
	go func() { _ = gui.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-gui.Process.Pid, syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-gui.Process.Pid, syscall.SIGKILL)
			<-g.exited
		}
		if t.Failed() {
			t.Logf("FreeCAD's output:\n%s", g.out)
		}
	})
	return g
}

// read answers what the driver last wrote (the last whole state.json), and
// fails the test once the driver reports an error or FreeCAD has exited.
func (g *addonGUI) read(t *testing.T) addonState {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	var s addonState
	b, err := os.ReadFile(filepath.Join(g.state, "state.json"))
	if err == nil && json.Unmarshal(b, &s) == nil {
		if s.Error != "" {
			t.Fatalf("the driver failed in FreeCAD:\n%s", s.Error)
		}
		g.last = s
	}
	select {
	case <-g.exited:
		t.Fatalf("FreeCAD exited (state: %+v):\n%s", g.last, g.out)
	default:
	}
	return g.last
}
