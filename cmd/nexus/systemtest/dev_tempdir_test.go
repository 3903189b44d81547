package systemtest

import (
	"path/filepath"
	"testing"
)

// TestKilledDevLeavesNoRuntimeFolder kills nexus dev with SIGKILL, as a
// crash would, and starts it again: the FreeCAD runtime's temporary folder
// of the killed process is gone once the new one serves, and the new one has
// its own. Before, every kill left a nexus-freecad-* folder behind for good.
func TestKilledDevLeavesNoRuntimeFolder(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	tmp := t.TempDir()
	httpAddr := freeAddr(t)
	env := append(append(devEnv(t, httpAddr), "TMPDIR="+tmp), demoModelEnv()...)
	runtimeDirs := func() []string {
		dirs, err := filepath.Glob(filepath.Join(tmp, "nexus-freecad-*"))
		if err != nil {
			t.Fatal(err)
		}
		return dirs
	}
	dev := start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	first := runtimeDirs()
	if len(first) != 1 {
		t.Fatalf("nexus dev made runtime folders %v, want one", first)
	}
	dev.Kill()
	if left := runtimeDirs(); len(left) != 1 {
		t.Fatalf("after SIGKILL the runtime folders are %v, want the killed one's still there", left)
	}
	start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	second := runtimeDirs()
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("after the restart the runtime folders are %v; want only the new one (the killed one was %s)", second, first[0])
	}
}
