package launcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
)

// countScript opens the file NEXUS_COUNT_FILE names in a FreeCAD of its own
// and prints its building elements by kind.
const countScript = `import json, os, FreeCAD
doc = FreeCAD.openDocument(os.environ["NEXUS_COUNT_FILE"])
kinds = {"Wall": "walls", "Door": "doors", "Window": "windows", "Building Storey": "levels"}
out = {"walls": 0, "doors": 0, "windows": 0, "levels": 0}
for o in doc.Objects:
    kind = kinds.get(str(getattr(o, "IfcType", "") or ""))
    if kind:
        out[kind] += 1
print("COUNTS " + json.dumps(out))
`

// countElements answers what a separate freecadcmd finds in the file.
func countElements(t *testing.T, file string) map[string]int {
	t.Helper()
	script := filepath.Join(t.TempDir(), "count.py")
	if err := os.WriteFile(script, []byte(countScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("freecadcmd", script)
	cmd.Env = append(os.Environ(), "NEXUS_COUNT_FILE="+file)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("freecadcmd count: %v\n%s", err, out)
	}
	// FreeCAD's progress output shares the line the counts are printed on.
	if _, rest, ok := strings.Cut(string(out), "COUNTS "); ok {
		line, _, _ := strings.Cut(rest, "\n")
		got := map[string]int{}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Fatalf("freecadcmd printed no counts:\n%s", out)
	return nil
}

// makeReadOnly makes dir read-only until the test ends: a read-only bind
// mount for root (whom file modes do not stop), mode 0500 otherwise.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s to make it read-only: %v", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}

// TestCommitsAreSavedToThePersonsFile runs the demo room against --document
// house.FCStd (which does not exist yet) and reads the file back in another
// FreeCAD: every commit is in the file, a rolled-back script leaves it byte
// for byte as it was, and a save into a read-only folder is reported as
// failed with the file untouched.
func TestCommitsAreSavedToThePersonsFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	house := filepath.Join(dir, "house.FCStd")
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", Document: house})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	if rt.SavesTo() != house {
		t.Fatalf("saves to %q, want %q", rt.SavesTo(), house)
	}
	run := func(mode hostv1.Mode, code string) *hostv1.HostResult {
		t.Helper()
		res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: mode, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := run(hostv1.Mode_MODE_TRANSACTION, launchertest.DemoRoomScript(t))
	if !res.GetCommitted() || res.GetSave().GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED || res.GetSave().GetPath() != house {
		t.Fatalf("want the room committed and saved to %s, got %v", house, res)
	}
	want := map[string]int{"walls": 4, "doors": 1, "windows": 1, "levels": 1}
	if got := countElements(t, house); !equalCounts(got, want) {
		t.Fatalf("%s holds %v, want %v", house, got, want)
	}
	saved, err := os.ReadFile(house)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		mode hostv1.Mode
		code string
	}{
		{hostv1.Mode_MODE_TRANSACTION, "import Arch\nArch.makeWall(None, length=500, width=100, height=500)\nraise RuntimeError('changed my mind')\n"},
		{hostv1.Mode_MODE_PREVIEW, "import Arch\nArch.makeWall(None, length=500, width=100, height=500)\n"},
		{hostv1.Mode_MODE_READ_ONLY, "print(len(doc.Objects))\n"},
	} {
		res := run(tt.mode, tt.code)
		if res.GetCommitted() || res.GetSave() != nil {
			t.Fatalf("%s: want nothing committed or saved, got %v", tt.mode, res)
		}
		if now, err := os.ReadFile(house); err != nil || !bytes.Equal(now, saved) {
			t.Fatalf("%s changed %s (%v)", tt.mode, house, err)
		}
	}

	// A second commit keeps the first as FreeCAD's backup, house.FCStd1.
	res = run(hostv1.Mode_MODE_TRANSACTION, "doc.getObject('Wall').Label = 'North wall'\n")
	if res.GetSave().GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED {
		t.Fatalf("second commit not saved: %v", res)
	}
	if backup, err := os.ReadFile(house + "1"); err != nil || !bytes.Equal(backup, saved) {
		t.Fatalf("backup %s1 is not the file before the commit (%v)", house, err)
	}
	saved, err = os.ReadFile(house)
	if err != nil {
		t.Fatal(err)
	}

	makeReadOnly(t, dir)
	res = run(hostv1.Mode_MODE_TRANSACTION, "doc.getObject('Wall001').Label = 'East wall'\n")
	s := res.GetSave()
	if !res.GetCommitted() || s.GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_FAILED || s.GetPath() != house ||
		!strings.Contains(s.GetError(), "could not write "+house+": the folder "+dir+" is read-only") {
		t.Fatalf("want the commit's save reported failed for the read-only folder, got %v", res)
	}
	if now, err := os.ReadFile(house); err != nil || !bytes.Equal(now, saved) {
		t.Fatalf("a failed save changed %s (%v)", house, err)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
