package systemtest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nexus.local/platform/gltftest"
)

// TestBrowserReview3D drives the 3D review in Chromium against nexus dev
// with the demo model and the real FreeCAD runtime (e2e/review3d.e2e.mjs):
// a preview card opens the model of the would-be state with exactly the
// changed elements highlighted, orbiting changes the picture at 1280 and at
// 390 px with touch, before/after toggles, no WebGL keeps the image, and
// the commit's card opens the committed state.
func TestBrowserReview3D(t *testing.T) {
	t.Parallel()
	d := startDevBrowser(t, "")
	t.Logf("%s", d.runE2E(t, nil, "e2e/review3d.e2e.mjs"))
	bin, env, artifacts := d.bin, d.env, d.artifacts

	// The same models from the command line, as files any glTF viewer opens.
	raw, err := os.ReadFile(filepath.Join(artifacts, "review3d", "ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ids struct{ Session, Call string }
	if err := json.Unmarshal(raw, &ids); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := func(args ...string) (string, error) {
		c := exec.Command(bin, append([]string{"model"}, args...)...)
		c.Env, c.Dir = append(os.Environ(), env...), dir
		got, err := c.CombinedOutput()
		return string(got), err
	}
	if said, err := model(ids.Session, ids.Call); err != nil || !strings.Contains(said, ids.Call+".glb") {
		t.Fatalf("nexus model: %v\n%s", err, said)
	}
	glb, err := os.ReadFile(filepath.Join(dir, ids.Call+".glb"))
	if err != nil {
		t.Fatal(err)
	}
	gltftest.Validate(t, glb)
	if n := len(gltftest.Nodes(t, glb)); n < 6 {
		t.Errorf("nexus model wrote %d nodes; want the room's walls, door and window", n)
	}
	if said, err := model("--before", "-f", "before.glb", ids.Session, ids.Call); err != nil {
		t.Fatalf("nexus model --before: %v\n%s", err, said)
	}
	if before, err := os.ReadFile(filepath.Join(dir, "before.glb")); err != nil || len(gltftest.Nodes(t, before)) != 0 {
		t.Errorf("the model before the room: %v, want an empty document's", err)
	}
	said, err := model(ids.Session, "no-such-call")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(said, "has no 3D model") {
		t.Errorf("nexus model of a call without one: %v\n%s", err, said)
	}
}
