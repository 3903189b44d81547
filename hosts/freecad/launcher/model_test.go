package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher/launchertest"
	"nexus.local/platform/gltftest"
	"nexus.local/platform/hostclient"
)

// drawnScript prints the names of the objects the runtime draws (its
// renderable rule), one a line: the nodes an export of the whole document
// must hold.
const drawnScript = `from nexus_freecad.elements import renderable
for o in doc.Objects:
    if renderable(o):
        print(o.Name)
`

func drawn(t *testing.T) []string {
	t.Helper()
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: drawnScript})
	if res.GetError() != nil {
		t.Fatalf("list drawn objects: %v", res.GetError())
	}
	return strings.Fields(res.GetStdout())
}

func nodeNames(nodes []gltftest.Node) []string {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names
}

// TestExportModelOfTheDemoRoom exports the demo's room as binary glTF: the
// Khronos validator finds no error, there is one node per drawn object
// named by its internal name, each with a mesh; a region exports only the
// objects it names; an export over its limit is refused naming the limit
// and changes nothing.
func TestExportModelOfTheDemoRoom(t *testing.T) {
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: launchertest.DemoRoomScript(t),
		TransactionName: "Room"}); !res.GetCommitted() {
		t.Fatalf("build the room: %v", res.GetError())
	}
	want := drawn(t)
	ctx := context.Background()
	started := time.Now()
	model, err := shared.Client.ExportModel(ctx, &hostv1.ExportModelRequest{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(started)
	if model.GetMimeType() != "model/gltf-binary" {
		t.Errorf("mime type %q", model.GetMimeType())
	}
	report := gltftest.Validate(t, model.GetData())
	nodes := gltftest.Nodes(t, model.GetData())
	if got := nodeNames(nodes); !slices.Equal(got, want) || !slices.Equal(model.GetElementIds(), want) {
		t.Fatalf("nodes %v, element ids %v; want the drawn objects %v", got, model.GetElementIds(), want)
	}
	for _, n := range nodes {
		if n.Mesh == nil {
			t.Errorf("node %s has no mesh", n.Name)
		}
	}
	categories := map[string]int{}
	for _, n := range nodes {
		categories[fmt.Sprint(n.Extras["category"])]++
	}
	if categories["Wall"] != 4 || categories["Door"] != 1 || categories["Window"] != 1 {
		t.Errorf("the room's nodes by category: %v; want 4 walls, a door and a window", categories)
	}
	t.Logf("demo room: %d bytes, %d nodes, %d triangles, exported in %s (runtime says %d ms)", len(model.GetData()),
		len(nodes), report.Info.TotalTriangleCount, took.Round(time.Millisecond), model.GetDurationMs())

	region, err := shared.Client.ExportModel(ctx, &hostv1.ExportModelRequest{ElementIds: want[:2]})
	if err != nil {
		t.Fatal(err)
	}
	gltftest.Validate(t, region.GetData())
	if got := nodeNames(gltftest.Nodes(t, region.GetData())); !slices.Equal(got, want[:2]) {
		t.Errorf("a region of %v exported %v", want[:2], got)
	}

	before, rev := dump(t), revision(t, shared.Client)
	_, err = shared.Client.ExportModel(ctx, &hostv1.ExportModelRequest{MaxBytes: 2048})
	var status *hostclient.StatusError
	if !errors.As(err, &status) || status.Code != 413 || !strings.Contains(status.Message, "export limit of 2048 bytes") {
		t.Fatalf("an export over 2048 bytes answered %v; want 413 naming the limit", err)
	}
	_, err = shared.Client.ExportModel(ctx, &hostv1.ExportModelRequest{ElementIds: []string{"NoSuchObject"}})
	if !errors.As(err, &status) || status.Code != 400 || !strings.Contains(status.Message, "NoSuchObject") {
		t.Fatalf("an export of a missing object answered %v; want 400 naming it", err)
	}
	if dump(t) != before || revision(t, shared.Client) != rev {
		t.Fatal("a refused export changed the document")
	}
}

// TestPreviewCarriesTheModelItWouldLeave previews the room with a model
// asked for: the model holds the room's objects (the state the script
// would leave), the changed objects are among its nodes, and after the
// rollback the document is byte for byte as before.
func TestPreviewCarriesTheModelItWouldLeave(t *testing.T) {
	freshDocument(t)
	before, rev := dump(t), revision(t, shared.Client)
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: launchertest.DemoRoomScript(t),
		TransactionName: "Room", Capture: &hostv1.Capture{View: "isometric", MaxPx: 320, Model: true}})
	if !res.GetPreviewed() || res.GetError() != nil {
		t.Fatalf("preview: previewed=%v error=%v", res.GetPreviewed(), res.GetError())
	}
	if res.GetModel() == nil {
		t.Fatalf("the preview carries no model (note %q)", res.GetModelNote())
	}
	gltftest.Validate(t, res.GetModel().GetData())
	// Before the script the document was empty: a valid model of no node.
	gltftest.Validate(t, res.GetModelBefore().GetData())
	if before := gltftest.Nodes(t, res.GetModelBefore().GetData()); len(before) != 0 || res.GetModelBeforeNote() != "" {
		t.Errorf("the model before the preview has nodes %v (note %q); the document was empty", before, res.GetModelBeforeNote())
	}
	names := nodeNames(gltftest.Nodes(t, res.GetModel().GetData()))
	if len(names) != 6 {
		t.Errorf("the previewed room's model has nodes %v; want its 4 walls, door and window", names)
	}
	for _, n := range names {
		if !slices.Contains(res.GetChanges().GetAdded(), n) {
			t.Errorf("node %s is not among the objects the preview added %v", n, res.GetChanges().GetAdded())
		}
	}
	if after := dump(t); after != before {
		t.Fatalf("the preview left the document changed: %s", firstDifference(before, after))
	}
	if got := revision(t, shared.Client); got != rev {
		t.Errorf("revision moved across the preview: %s -> %s", rev, got)
	}
	if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT && res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_UNSPECIFIED {
		t.Errorf("rollback %v", res.GetRollback())
	}
}

// BenchmarkExportModel1000 exports a document of 1,000 walls.
func BenchmarkExportModel1000(b *testing.B) {
	res := execute(b, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "for name in [o.Name for o in doc.Objects][::-1]:\n    doc.removeObject(name)\n" +
		"import Arch\nfor i in range(1000):\n    w = Arch.makeWall(None, length=1000, width=200, height=2500)\n" +
		"    w.Placement = App.Placement(App.Vector((i % 40) * 1500, (i // 40) * 1500, 0), App.Rotation())\n"})
	if !res.GetCommitted() {
		b.Fatalf("build 1,000 walls: %v", res.GetError())
	}
	b.ResetTimer()
	var size int
	for range b.N {
		model, err := shared.Client.ExportModel(context.Background(), &hostv1.ExportModelRequest{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(model.GetData())
	}
	b.ReportMetric(float64(size), "glb-bytes")
}
