package revit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/capability"
)

// articleScript is written from the Revit API documentation, not from the
// double: Wall.Create(Document, Curve, ElementId, Boolean) and
// Document.NewFamilyInstance(XYZ, FamilySymbol, Element, Level,
// StructuralType), as the reference's own examples use them.
const articleScript = `import clr
clr.AddReference("RevitAPI")
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType

level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
wall = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), level.Id, False)
symbol = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()
if not symbol.IsActive:
    symbol.Activate()
door = doc.Create.NewFamilyInstance(XYZ(5, 0, 0), symbol, wall, level, StructuralType.NonStructural)
print("wall", wall.Id.Value, "door", door.Id.Value, "host", door.Host.Id.Value)
`

const dumpScript = `import json
from Autodesk.Revit.DB import FilteredElementCollector
out = {}
for c in (FilteredElementCollector(doc).WhereElementIsNotElementType(), FilteredElementCollector(doc).WhereElementIsElementType()):
    for e in c:
        out[str(e.Id.Value)] = [type(e).__name__, e.Name, sorted((p.Definition.Name, str(p.AsValueString())) for p in e.Parameters)]
print(json.dumps(out, sort_keys=True))
`

type runtime struct {
	t        *testing.T
	p        *Process
	epilogue map[string]any
	framing  json.RawMessage
}

func startRuntime(t *testing.T, version int) *runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{Addr: "127.0.0.1:0", Token: "revit-test", RevitVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	guidance, epilogue, err := capability.HostBehaviour("revit")
	if err != nil {
		t.Fatal(err)
	}
	framing, err := protojson.Marshal(guidance.GetHost().GetViewDefaults().GetFraming())
	if err != nil {
		t.Fatal(err)
	}
	return &runtime{t: t, p: p, epilogue: map[string]any{"code": epilogue.GetCode(), "contentHash": epilogue.GetContentHash()},
		framing: framing}
}

func (r *runtime) run(mode, code string, capture bool) *hostv1.HostResult {
	r.t.Helper()
	body := map[string]any{"mode": mode, "code": code, "transactionName": "test", "epilogue": r.epilogue}
	if capture {
		body["capture"] = map[string]any{"view": "3d", "maxPx": 512, "framing": r.framing}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		r.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, r.p.URL+"/v1/execute", bytes.NewReader(raw))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.p.Token)
	res, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		r.t.Fatalf("execute answered %d: %s %v", res.StatusCode, answer, err)
	}
	out := &hostv1.HostResult{}
	if err := protojson.Unmarshal(answer, out); err != nil {
		r.t.Fatalf("not a HostResult: %v\n%s", err, answer)
	}
	return out
}

func (r *runtime) dump() string {
	r.t.Helper()
	res := r.run("MODE_READ_ONLY", dumpScript, false)
	if res.GetError() != nil {
		r.t.Fatalf("dump: %v", res.GetError())
	}
	return res.GetStdout()
}

// TestArticleScriptOnTheDouble runs the article's walls-and-door script,
// written from the Revit API reference, unchanged on the double, and reads
// the change report the model is shown.
func TestArticleScriptOnTheDouble(t *testing.T) {
	r := startRuntime(t, 2026)
	res := r.run("MODE_TRANSACTION", articleScript, true)
	if !res.GetCommitted() || res.GetError() != nil {
		t.Fatalf("not committed: %v\n%s", res.GetError(), res.GetStdout())
	}
	added := res.GetChanges().GetAdded()
	if len(added) != 2 {
		t.Fatalf("want a wall and a door added, got %v", res.GetChanges())
	}
	report := res.GetEpilogue().GetStdout()
	for _, want := range []string{
		"#" + added[0] + " Walls | Basic Wall: Generic - 200mm | Level: Level 1",
		"#" + added[1] + " Doors | Single-Flush: 0915 x 2134mm | Level: Level 1",
		"2 building element(s) changed: 2 added, 0 modified, 0 deleted",
		"Construction helpers: 1 modified (1 door type)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(res.GetStdout(), fmt.Sprintf("host %s", added[0])) {
		t.Errorf("the door is not hosted in the wall: %s", res.GetStdout())
	}
	if len(res.GetImages()) != 1 {
		t.Errorf("no image: %s", res.GetCaptureNote())
	}
}

// TestGroupedCountsPastFifteen: sixteen walls are counted by category and
// type, not named one by one.
func TestGroupedCountsPastFifteen(t *testing.T) {
	r := startRuntime(t, 2026)
	res := r.run("MODE_TRANSACTION", `from Autodesk.Revit.DB import *
level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
for i in range(16):
    Wall.Create(doc, Line.CreateBound(XYZ(0, 10 * i, 0), XYZ(20, 10 * i, 0)), level.Id, False)
`, false)
	report := res.GetEpilogue().GetStdout()
	for _, want := range []string{"16 building element(s) changed: 16 added", "Added by category and type:",
		"  Walls / Basic Wall: Generic - 200mm: 16 (e.g. #"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, " Walls | ") {
		t.Errorf("sixteen walls are named one by one:\n%s", report)
	}
}

// TestRaisingScriptLeavesTheDocumentAsBefore: the article's script followed
// by an error is rolled back exactly, and so is a script that opens a
// transaction of its own (Revit refuses the second transaction).
func TestRaisingScriptLeavesTheDocumentAsBefore(t *testing.T) {
	r := startRuntime(t, 2026)
	if res := r.run("MODE_TRANSACTION", articleScript, false); !res.GetCommitted() {
		t.Fatalf("setup: %v", res.GetError())
	}
	for _, c := range []struct{ code, errType string }{
		{articleScript + "raise RuntimeError('the door is in the wrong wall')\n", "RuntimeError"},
		{articleScript + "t = Transaction(doc, 'mine')\nt.Start()\n", "InvalidOperationException"},
		{articleScript + "doc.Delete(wall.Id)\nElementId('1')\n", "TypeError"},
	} {
		before := r.dump()
		res := r.run("MODE_TRANSACTION", c.code, true)
		if res.GetCommitted() || res.GetError().GetType() != c.errType {
			t.Errorf("want an uncommitted %s, got committed=%v %v", c.errType, res.GetCommitted(), res.GetError())
		}
		if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT {
			t.Errorf("rollback %v %v", res.GetRollback(), res.GetRollbackDifferences())
		}
		if after := r.dump(); after != before {
			t.Errorf("the double's document differs after a %s:\nbefore %s\nafter  %s", c.errType, before, after)
		}
	}
}

// TestRevitWarningsReachTheReport: Revit's failure processing warns about
// overlapping walls; the add-in keeps the commit and tells the model.
func TestRevitWarningsReachTheReport(t *testing.T) {
	r := startRuntime(t, 2026)
	res := r.run("MODE_TRANSACTION", `from Autodesk.Revit.DB import *
level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), level.Id, False)
Wall.Create(doc, Line.CreateBound(XYZ(5, 0, 0), XYZ(15, 0, 0)), level.Id, False)
`, false)
	if !res.GetCommitted() {
		t.Fatalf("a warning must not stop the commit: %v", res.GetError())
	}
	if !strings.Contains(res.GetEpilogue().GetStdout(), "Revit warning: Highlighted walls overlap.") {
		t.Errorf("the report lacks Revit's warning:\n%s", res.GetEpilogue().GetStdout())
	}
}

// TestFramedOnTheChange: a small change in a large model is framed on the
// changed elements, a new isometric view with a section box taken inside a
// transaction that is rolled back.
func TestFramedOnTheChange(t *testing.T) {
	r := startRuntime(t, 2026)
	r.run("MODE_TRANSACTION", `from Autodesk.Revit.DB import *
level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
for i in range(4):
    Wall.Create(doc, Line.CreateBound(XYZ(0, 100 * i, 0), XYZ(300, 100 * i, 0)), level.Id, False)
`, false)
	before := r.dump()
	res := r.run("MODE_TRANSACTION", `from Autodesk.Revit.DB import *
level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
w = Wall.Create(doc, Line.CreateBound(XYZ(20, 40, 0), XYZ(30, 40, 0)), level.Id, False)
print(w.Id.Value)
`, true)
	if len(res.GetImages()) != 1 || res.GetImages()[0].GetFramed() != "changed: #"+strings.TrimSpace(res.GetStdout()) {
		t.Fatalf("want an image framed on the new wall, got %d images %v (%s)", len(res.GetImages()),
			res.GetImages(), res.GetCaptureNote())
	}
	after := r.dump()
	if strings.Count(after, `"View3D"`) != strings.Count(before, `"View3D"`) {
		t.Errorf("the framing view was kept in the document")
	}
}

// TestOlderRevitIds: on Revit 2023 element ids have IntegerValue only; the
// report still names them.
func TestOlderRevitIds(t *testing.T) {
	r := startRuntime(t, 2023)
	res := r.run("MODE_TRANSACTION", strings.ReplaceAll(articleScript, ".Id.Value", ".Id.IntegerValue"), false)
	if !res.GetCommitted() || !strings.Contains(res.GetEpilogue().GetStdout(), "Walls | Basic Wall: Generic - 200mm") {
		t.Fatalf("Revit 2023: %v\n%s", res.GetError(), res.GetEpilogue().GetStdout())
	}
	if res := r.run("MODE_READ_ONLY", "print(doc.ActiveView.Id.Value)", false); res.GetError().GetType() != "AttributeError" {
		t.Errorf("Revit 2023 has no ElementId.Value: %v", res.GetError())
	}
}
