package freecad_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nexus.local/hosts/freecad"
)

// addonProbe imports what the add-on runs on the way FreeCAD gives it its
// folder (on sys.path, from package.xml's subdirectory) and says where each
// package came from.
const addonProbe = `import nexus_addon.paths as p
p.ensure()
import hostkit.link, nexus_freecad.adapter
print("NEXUS-ADDON", p.ADDON_DIR)
print("NEXUS-KIT", hostkit.link.__file__)
print("NEXUS-ADAPTER", nexus_freecad.adapter.__file__)
`

// probeAddon runs freecadcmd with home as HOME and answers what addonProbe
// printed, by key.
func probeAddon(t *testing.T, home string) map[string]string {
	t.Helper()
	cmd := exec.Command("freecadcmd", "-c", addonProbe)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	out, err := cmd.CombinedOutput()
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(k, "NEXUS-") {
			got[k] = v
		}
	}
	if err != nil || len(got) != 3 {
		t.Fatalf("freecadcmd did not load the add-on's packages: %v\n%s", err, out)
	}
	return got
}

// modDir is FreeCAD's Mod folder for HOME=home on this system.
func modDir(t *testing.T, home string) string {
	t.Helper()
	cmd := exec.Command("freecadcmd", "-c", "import FreeCAD; print('NEXUS-DATA=' + FreeCAD.getUserAppDataDir())")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "NEXUS-DATA="); ok {
			return filepath.Join(d, "Mod")
		}
	}
	t.Fatalf("freecadcmd did not say where its user data is: %v\n%s", err, out)
	return ""
}

// TestInstalledAddonRunsOnTheEmbeddedKit installs the add-on as nexus host
// freecad --install-addon does: FreeCAD finds it by its package.xml, and it
// runs on the kit and adapter written beside it, the packages Nexus embeds.
// A folder of that name that is not the add-on is left alone.
func TestInstalledAddonRunsOnTheEmbeddedKit(t *testing.T) {
	home := t.TempDir()
	mod := modDir(t, home)
	dir, err := freecad.WriteAddon(mod)
	if err != nil {
		t.Fatal(err)
	}
	got := probeAddon(t, home)
	if filepath.Clean(got["NEXUS-ADDON"]) != dir {
		t.Errorf("FreeCAD loaded the add-on from %s, want %s", got["NEXUS-ADDON"], dir)
	}
	for _, k := range []string{"NEXUS-KIT", "NEXUS-ADAPTER"} {
		if !strings.HasPrefix(got[k], filepath.Join(dir, "lib")+string(filepath.Separator)) {
			t.Errorf("%s came from %s, want the add-on's lib folder", k, got[k])
		}
	}
	// Installing again replaces the earlier install.
	if _, err := freecad.WriteAddon(mod); err != nil {
		t.Fatalf("install over an earlier install: %v", err)
	}

	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, freecad.AddonName), 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(other, freecad.AddonName, "package.xml")
	if err := os.WriteFile(keep, []byte("<package><name>Someone else's</name></package>"), 0o644); err != nil {
		t.Fatal(err)
	}
	var notAddon *freecad.NotAddonError
	if _, err := freecad.WriteAddon(other); !errors.As(err, &notAddon) {
		t.Fatalf("install over another add-on's folder: %v, want a NotAddonError", err)
	}
	if b, err := os.ReadFile(keep); err != nil || !strings.Contains(string(b), "Someone else's") {
		t.Errorf("the other add-on's folder was touched: %q, %v", b, err)
	}
}

// TestAddonLoadsFromTheRepository is the Addon Manager's install from this
// repository: the clone is one folder in Mod, whose package.xml at the root
// points FreeCAD at hosts/freecad/addon/Nexus, and the add-on runs on the
// kit and adapter of the same clone.
func TestAddonLoadsFromTheRepository(t *testing.T) {
	home := t.TempDir()
	clone := filepath.Join(modDir(t, home), "nexus")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"hosts/freecad/addon", "hosts/freecad/nexus_freecad", "hosts/hostkit"} {
		if err := os.CopyFS(filepath.Join(clone, rel), os.DirFS(filepath.Join(repo, rel))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(repo, "package.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "package.xml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got := probeAddon(t, home)
	if want := filepath.Join(clone, "hosts", "freecad", "addon", "Nexus"); filepath.Clean(got["NEXUS-ADDON"]) != want {
		t.Errorf("FreeCAD loaded the add-on from %s, want %s", got["NEXUS-ADDON"], want)
	}
	if want := filepath.Join(clone, "hosts", "hostkit") + string(filepath.Separator); !strings.HasPrefix(got["NEXUS-KIT"], want) {
		t.Errorf("the kit came from %s, want the clone's %s", got["NEXUS-KIT"], want)
	}
	if want := filepath.Join(clone, "hosts", "freecad", "nexus_freecad") + string(filepath.Separator); !strings.HasPrefix(got["NEXUS-ADAPTER"], want) {
		t.Errorf("the adapter came from %s, want the clone's %s", got["NEXUS-ADAPTER"], want)
	}
}
