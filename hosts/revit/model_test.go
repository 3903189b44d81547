package revit

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/gltftest"
	"nexus.local/platform/hostclient"
)

// viewedScript prints the ids of the elements the default 3D view shows:
// what an export of the whole project must hold, one node each.
const viewedScript = `from Autodesk.Revit.DB import FilteredElementCollector
for e in FilteredElementCollector(doc).WhereElementIsNotElementType():
    if e.Category is not None and e.Category.Name not in ("Views", "Levels") and e.get_BoundingBox(None) is not None:
        print(e.Id.Value)
`

// TestExportModelOnTheDouble exports the article's wall and door through the
// add-in's CustomExporter context: the Khronos validator finds no error,
// one node per element named by its id, the door (a family instance, whose
// geometry comes in its family's coordinates under an instance transform)
// where its bounding box is; a preview carries the model of what it would
// leave and the project is as before after it; an export over its limit is
// refused naming the limit.
func TestExportModelOnTheDouble(t *testing.T) {
	r := startRuntime(t, 2026)
	res := r.run("MODE_TRANSACTION", articleScript, false)
	if !res.GetCommitted() {
		t.Fatalf("not committed: %v", res.GetError())
	}
	added := res.GetChanges().GetAdded()
	c := &hostclient.Client{URL: r.p.URL, Token: r.p.Token}
	ctx := context.Background()
	model, err := c.ExportModel(ctx, &hostv1.ExportModelRequest{})
	if err != nil {
		t.Fatal(err)
	}
	report := gltftest.Validate(t, model.GetData())
	viewed := strings.Fields(r.run("MODE_READ_ONLY", viewedScript, false).GetStdout())
	var names []string
	for _, n := range gltftest.Nodes(t, model.GetData()) {
		names = append(names, n.Name)
		if n.Mesh == nil {
			t.Errorf("node %s has no mesh", n.Name)
		}
	}
	if !slices.Equal(names, viewed) || !slices.Equal(model.GetElementIds(), viewed) {
		t.Fatalf("nodes %v (ids %v); want the elements the 3D view shows %v", names, model.GetElementIds(), viewed)
	}
	for _, id := range added {
		if !slices.Contains(names, id) {
			t.Errorf("the added element %s has no node", id)
		}
	}
	t.Logf("wall and door: %d bytes, %d nodes, %d triangles", len(model.GetData()), len(names), report.Info.TotalTriangleCount)

	// The door's geometry is placed by its instance transform: its node's
	// extent in glTF (metres, +Y up) is its bounding box in feet.
	box := strings.Fields(r.run("MODE_READ_ONLY", "from nexus_revit.ids import element_id\nb = doc.GetElement(element_id('"+added[1]+
		"')).get_BoundingBox(None)\nprint(b.Min.X, b.Min.Y, b.Min.Z, b.Max.X, b.Max.Y, b.Max.Z)\n", false).GetStdout())
	door, err := c.ExportModel(ctx, &hostv1.ExportModelRequest{ElementIds: []string{added[1]}})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := gltftest.Extent(t, door.GetData())
	feet := func(i int) float64 {
		v, err := strconv.ParseFloat(box[i], 64)
		if err != nil {
			t.Fatalf("bounding box %v: %v", box, err)
		}
		return v * 0.3048
	}
	want := [][2]float64{{feet(0), feet(3)}, {feet(2), feet(5)}, {-feet(4), -feet(1)}}
	for axis, w := range want {
		if math.Abs(lo[axis]-w[0]) > 1e-4 || math.Abs(hi[axis]-w[1]) > 1e-4 {
			t.Errorf("door extent on axis %d: %.4f..%.4f, want %.4f..%.4f (its bounding box %v ft)", axis, lo[axis], hi[axis], w[0], w[1], box)
		}
	}

	before := r.dump()
	preview, err := c.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, TransactionName: "Wall",
		Code: "from Autodesk.Revit.DB import *\nlevel = FilteredElementCollector(doc).OfClass(Level).FirstElement()\n" +
			"Wall.Create(doc, Line.CreateBound(XYZ(0, 5, 0), XYZ(10, 5, 0)), level.Id, False)\n",
		Capture: &hostv1.Capture{View: "3d", MaxPx: 256, Model: true}})
	if err != nil || !preview.GetPreviewed() {
		t.Fatalf("preview: %v %v", err, preview.GetError())
	}
	if preview.GetModel() == nil {
		t.Fatalf("the preview carries no model: %q", preview.GetModelNote())
	}
	gltftest.Validate(t, preview.GetModel().GetData())
	previewed := preview.GetModel().GetElementIds()
	if len(preview.GetChanges().GetAdded()) != 1 || !slices.Contains(previewed, preview.GetChanges().GetAdded()[0]) ||
		len(previewed) != len(viewed)+1 {
		t.Errorf("the preview's model holds %v; want the %d elements before and the wall it adds (%v)", previewed, len(viewed),
			preview.GetChanges().GetAdded())
	}
	if got := preview.GetModelBefore().GetElementIds(); !slices.Equal(got, viewed) {
		t.Errorf("the model before the preview holds %v; want what the project held %v", got, viewed)
	}
	if r.dump() != before {
		t.Fatal("the preview changed the project")
	}
	_, err = c.ExportModel(ctx, &hostv1.ExportModelRequest{MaxBytes: 300})
	var status *hostclient.StatusError
	if !errors.As(err, &status) || status.Code != 413 || !strings.Contains(status.Message, "export limit of 300 bytes") {
		t.Fatalf("an export over 300 bytes answered %v; want 413 naming the limit", err)
	}
	_, err = c.ExportModel(ctx, &hostv1.ExportModelRequest{ElementIds: []string{"999999999"}})
	if !errors.As(err, &status) || status.Code != 400 || !strings.Contains(status.Message, "999999999") {
		t.Fatalf("an export of a missing element answered %v; want 400 naming it", err)
	}
	if r.dump() != before {
		t.Fatal("a refused export changed the project")
	}
}
