package systemtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// addonState is what the driver (testdata/addon_driver.py) reads from the
// FreeCAD window.
type addonState struct {
	Toolbars    []string `json:"toolbars"`
	Workbench   string   `json:"workbench"`
	Status      string   `json:"status"`
	PairingCode string   `json:"pairingCode"`
	// ConnectOffered is the URL Connect's dialog was filled with.
	ConnectOffered string `json:"connectOffered"`
	// PairingText is the pairing dialog's text, PairingLinkOpens whether
	// its link opens in the browser.
	PairingText      string   `json:"pairingText"`
	PairingLinkOpens bool     `json:"pairingLinkOpens"`
	Linked           bool     `json:"linked"`
	Document         string   `json:"document"`
	Objects          []string `json:"objects"`
	Modified         bool     `json:"modified"`
	Running          bool     `json:"running"`
	Written          float64  `json:"written"`
	Error            string   `json:"error"`
}

// guiPatience bounds the waits on FreeCAD's GUI on a loaded machine; it
// guards against a hang, it measures nothing.
const guiPatience = 5 * time.Minute

// TestFreeCADAddonInTheGUI is the add-on as a FreeCAD user meets it:
// `nexus host freecad --install-addon` puts it into FreeCAD's Mod folder;
// Debian's FreeCAD GUI (under Xvfb) loads it with its Nexus toolbar; Connect
// to Nexus, against `nexus dev --no-host`, shows a pairing code that `nexus
// hosts approve` approves, and links; the demo prompt sent from the web UI in
// Chromium builds the room in that GUI's document, which FreeCAD then shows as
// modified. Screenshots land in test-artifacts/freecad-addon.
func TestFreeCADAddonInTheGUI(t *testing.T) {
	// Not in parallel: xvfb-run -a takes the first display number
	// whose lock file is missing, so two started together can pick the same.
	for _, tool := range []string{"freecad", "freecadcmd", "xvfb-run"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the add-on's GUI test needs %s (Debian's freecad and xvfb packages): %v", tool, err)
		}
	}
	artifacts := repoPath(t, "test-artifacts/freecad-addon")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildNexus(t)
	env := startDev(t, bin, "NEXUS_DEV_NO_HOST=true")
	base := devState(t, env).GatewayURL

	home := t.TempDir()
	install := exec.Command(bin, "host", "freecad", "--install-addon")
	install.Env = append(append([]string{}, env...), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	out, err := install.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus host freecad --install-addon: %v\n%s", err, out)
	}
	addonDir := ""
	for _, line := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(line, "installed the Nexus add-on in "); ok {
			addonDir = d
		}
	}
	if !strings.HasPrefix(addonDir, home) || filepath.Base(addonDir) != "Nexus" {
		t.Fatalf("--install-addon says %q; want the Nexus folder in FreeCAD's Mod folder under %s", out, home)
	}
	for _, f := range []string{"package.xml", "InitGui.py", "lib/hostkit/link.py", "lib/nexus_freecad/adapter.py"} {
		if _, err := os.Stat(filepath.Join(addonDir, f)); err != nil {
			t.Errorf("the installed add-on lacks %s: %v", f, err)
		}
	}

	gui := startAddonDriver(t, home, artifacts, base)

	var st addonState
	read := func() addonState {
		st = gui.read(t)
		return st
	}
	shot := func(name string) {
		req := filepath.Join(gui.state, "shot-"+name)
		if err := os.WriteFile(req, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the screenshot "+name, guiPatience, func() bool {
			read()
			_, err := os.Stat(req + ".done")
			return err == nil
		})
		t.Logf("screenshot: %s", filepath.Join(artifacts, name+".png"))
	}

	waitFor(t, "FreeCAD to load the add-on and show a pairing code", guiPatience, func() bool {
		return read().PairingCode != ""
	})
	if st.Workbench != "NexusWorkbench" || !contains(st.Toolbars, "Nexus") {
		t.Errorf("FreeCAD shows workbench %q with toolbars %v; want the Nexus workbench and its Nexus toolbar", st.Workbench, st.Toolbars)
	}
	// The indicator is redrawn on its own timer, a moment after the code came.
	waitFor(t, "the status indicator to show the code "+st.PairingCode, guiPatience, func() bool {
		return strings.Contains(read().Status, "approve code "+st.PairingCode)
	})
	if st.ConnectOffered != base {
		t.Errorf("Connect to Nexus offered %q; want the URL given last, %s", st.ConnectOffered, base)
	}
	waitFor(t, "the pairing dialog", guiPatience, func() bool { return read().PairingText != "" })
	if link := base + "/#approve=" + st.PairingCode; !strings.Contains(st.PairingText, `<a href="`+link+`">`+link+`</a>`) || !st.PairingLinkOpens {
		t.Errorf("the pairing dialog says %q (its link opens: %t); want the link %s to approve, opening in the browser", st.PairingText, st.PairingLinkOpens, link)
	}
	shot("toolbar")

	approve := exec.Command(bin, "hosts", "approve", st.PairingCode)
	approve.Env = env
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("nexus hosts approve %s: %v\n%s", st.PairingCode, err, out)
	}
	// The indicator is brought up to date on a timer of its own: the wait
	// is for it to say what the link is.
	waitFor(t, "the add-on to link and its indicator to say so", guiPatience, func() bool {
		return read().Linked && strings.Contains(st.Status, "linked as h_")
	})
	if st.Modified {
		t.Errorf("the document is marked modified before anything ran")
	}

	sessionID := demoFromTheWebUI(t, base, devState(t, env).PairingSecret, artifacts)
	// What the window shows once the run is over: read after it, with no
	// script running.
	over := float64(time.Now().UnixNano()) / 1e9
	waitFor(t, "the room in FreeCAD's document, and the indicator naming the session", guiPatience, func() bool {
		s := read()
		return s.Written > over && !s.Running && strings.Contains(s.Status, "session "+sessionID)
	})
	n := map[string]int{}
	for _, o := range st.Objects {
		typ, ifc, _ := strings.Cut(o, "|")
		switch {
		case typ == "Wall":
			n["wall"]++
		case strings.Contains(ifc, "Door"):
			n["door"]++
		case typ == "Window":
			n["window"]++
		case strings.Contains(ifc, "Storey"):
			n["level"]++
		}
	}
	for k, v := range map[string]int{"wall": 4, "door": 1, "window": 1, "level": 1} {
		if n[k] != v {
			t.Errorf("FreeCAD's document %s has %d %s(s), want %d (all: %v)", st.Document, n[k], k, v, st.Objects)
		}
	}
	if !st.Modified {
		t.Errorf("FreeCAD does not show the document as modified after the commit: the person would not be asked to save it")
	}
	shot("walls")
	for _, name := range []string{"toolbar", "walls"} {
		if info, err := os.Stat(filepath.Join(artifacts, name+".png")); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s: %v", name, errors.Join(err))
		}
	}
}

// demoFromTheWebUI sends the demo prompt from the web UI in Chromium
// (gateway/web/e2e/addon.e2e.mjs) and answers the session the page ran it in.
func demoFromTheWebUI(t *testing.T, base, pairingSecret, artifacts string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := e2eCommand(ctx, t, base, pairingSecret, artifacts, "--test", "--test-reporter=spec", "e2e/addon.e2e.mjs")
	cmd.Env = append(cmd.Env, "NEXUS_DEMO_PROMPT="+demoPrompt)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test e2e/addon.e2e.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the demo from the web UI: %v", err)
	}
	m := regexp.MustCompile(`session=(s_[0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the page never named its session")
	}
	return string(m[1])
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
