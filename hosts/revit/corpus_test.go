package revit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// corpusCase is one script of the Revit corpus: setup makes what body
// works on. A plain run measures setup and body together from the seeded
// project; a split run commits setup first and measures body against a
// document that already holds its elements, where modified and deleted
// elements show up.
type corpusCase struct {
	name, setup, body string
}

const corpusPrelude = `from Autodesk.Revit.DB import *
from Autodesk.Revit.DB import Structure
level = sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)[0]
wall_type = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == "Generic - 200mm"][0]
door = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()
walls = lambda: list(FilteredElementCollector(doc).OfClass(Wall))
`

const corpusWall = "wall = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(20, 0, 0)), level.Id, False)\n"

// corpusCases covers what the double models of the API: each creation
// call, moving, setting parameters (to new values and to their own),
// flipping, pinning, changing a type, deleting with dependents, and an
// element created and deleted by the same script.
func corpusCases() []corpusCase {
	door := corpusWall + "if not door.IsActive: door.Activate()\n" +
		"inst = doc.Create.NewFamilyInstance(XYZ(5, 0, 0), door, wall, level, Structure.StructuralType.NonStructural)\n"
	return []corpusCase{
		{name: "wall", body: corpusWall},
		{name: "wall with type and height", body: "Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(0, 15, 0)), wall_type.Id, level.Id, 10.0, 0.0, False, False)\n"},
		{name: "level", body: "l = Level.Create(doc, 25.0)\nl.Name = 'Roof deck'\n"},
		{name: "door in a wall", setup: corpusWall, body: "wall = walls()[0]\nif not door.IsActive: door.Activate()\n" +
			"doc.Create.NewFamilyInstance(XYZ(5, 0, 0), door, wall, level, Structure.StructuralType.NonStructural)\n"},
		{name: "floor", body: "pts = [XYZ(0, 0, 0), XYZ(20, 0, 0), XYZ(20, 10, 0), XYZ(0, 10, 0)]\n" +
			"loop = CurveLoop.Create([Line.CreateBound(pts[i], pts[(i + 1) % 4]) for i in range(4)])\n" +
			"ft = FilteredElementCollector(doc).OfClass(FloorType).FirstElement()\nFloor.Create(doc, [loop], ft.Id, level.Id)\n"},
		{name: "model line", body: "plane = SketchPlane.Create(doc, Plane.CreateByNormalAndOrigin(XYZ.BasisZ, XYZ.Zero))\n" +
			"doc.Create.NewModelCurve(Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 5, 0)), plane)\n"},
		{name: "reference plane", body: "doc.Create.NewReferencePlane(XYZ(0, 0, 0), XYZ(0, 10, 0), XYZ.BasisZ, doc.ActiveView)\n"},
		{name: "isometric view", body: "vft = [v for v in FilteredElementCollector(doc).OfClass(ViewFamilyType) if v.ViewFamily == ViewFamily.ThreeDimensional][0]\n" +
			"View3D.CreateIsometric(doc, vft.Id)\n"},
		{name: "move a wall", setup: corpusWall, body: "walls()[0].Location.Move(XYZ(0, 5, 0))\n"},
		{name: "wall height", setup: corpusWall, body: "walls()[0].get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM).Set(12.0)\n"},
		{name: "parameter set to its own value", setup: corpusWall, body: "p = walls()[0].get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM)\np.Set(p.AsDouble())\n"},
		{name: "moved there and back", setup: corpusWall, body: "w = walls()[0]\nw.Location.Move(XYZ(3, 0, 0))\nw.Location.Move(XYZ(-3, 0, 0))\n"},
		{name: "comments", setup: corpusWall, body: "walls()[0].get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).Set('check with structure')\n"},
		{name: "pin", setup: corpusWall, body: "walls()[0].Pinned = True\n"},
		{name: "flip a door", setup: door, body: "FilteredElementCollector(doc).OfClass(FamilyInstance).FirstElement().flipFacing()\n"},
		{name: "wall type", setup: corpusWall, body: "brick = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == 'Exterior - Brick on CMU'][0]\n" +
			"walls()[0].WallType = brick\n"},
		{name: "delete a wall with its door", setup: door, body: "doc.Delete(walls()[0].Id)\n"},
		{name: "created and deleted", body: corpusWall + "doc.Delete(wall.Id)\n"},
		{name: "rename a level", setup: "Level.Create(doc, 30.0)\n", body: "[l for l in FilteredElementCollector(doc).OfClass(Level) if abs(l.Elevation - 30.0) < 1e-9][0].Name = 'Attic'\n"},
	}
}

// independentDump reads the double's own element table, not the API the
// runtime reads: every element's class and data.
const independentDump = `import json
def freeze(v):
    if isinstance(v, dict):
        return [[str(k), freeze(x)] for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))]
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [freeze(x) for x in v]
        return sorted(items, key=json.dumps) if isinstance(v, (set, frozenset)) else items
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    fields = dict(getattr(v, "__dict__", {}))
    for klass in type(v).__mro__:
        for s in getattr(klass, "__slots__", ()):
            if hasattr(v, s):
                fields[s] = getattr(v, s)
    if fields:
        return [type(v).__name__, freeze(fields)]
    return [type(v).__name__, str(int(v)) if hasattr(v, "__int__") else repr(v)]
print(json.dumps({str(i): [type(e).__name__, freeze(e._data)] for i, e in doc._elements.items()}, sort_keys=True))
`

type corpusDump map[string]json.RawMessage

func (r *runtime) corpusDump() corpusDump {
	r.t.Helper()
	res := r.run("MODE_READ_ONLY", independentDump, false)
	if res.GetError() != nil {
		r.t.Fatalf("dump: %v", res.GetError())
	}
	d := corpusDump{}
	if err := json.Unmarshal([]byte(res.GetStdout()), &d); err != nil {
		r.t.Fatalf("dump: %v: %s", err, res.GetStdout())
	}
	return d
}

// dumpChanges is what changed between two dumps: the score.
func dumpChanges(before, after corpusDump) (added, modified, deleted []string) {
	for id, v := range after {
		if old, ok := before[id]; !ok {
			added = append(added, id)
		} else if string(old) != string(v) {
			modified = append(modified, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			deleted = append(deleted, id)
		}
	}
	for _, s := range [][]string{added, modified, deleted} {
		sort.Strings(s)
	}
	return added, modified, deleted
}

func sameIDs(got, want []string) bool {
	g := append([]string(nil), got...)
	sort.Strings(g)
	return strings.Join(g, ",") == strings.Join(want, ",")
}

// scoreChanges holds a result's changes and report to the dumps' difference.
func scoreChanges(res *hostv1.HostResult, before, after corpusDump) []string {
	var problems []string
	added, modified, deleted := dumpChanges(before, after)
	c := res.GetChanges()
	for _, k := range []struct {
		kind      hostv1.ChangeKind
		got, want []string
	}{
		{hostv1.ChangeKind_CHANGE_KIND_ADDED, c.GetAdded(), added},
		{hostv1.ChangeKind_CHANGE_KIND_MODIFIED, c.GetModified(), modified},
		{hostv1.ChangeKind_CHANGE_KIND_DELETED, c.GetDeleted(), deleted},
	} {
		if !sameIDs(k.got, k.want) {
			problems = append(problems, fmt.Sprintf("%s: changes say %v, the dump %v", k.kind, k.got, k.want))
		}
		counted := 0
		for _, e := range res.GetEpilogue().GetReport().GetElements() {
			if e.GetChange() == k.kind {
				counted++
				if e.GetCategory() == "" || e.GetCategory() == "Unknown" {
					problems = append(problems, fmt.Sprintf("report names #%s with no category", e.GetName()))
				}
			}
		}
		for _, h := range res.GetEpilogue().GetReport().GetHelpers() {
			if h.GetChange() == k.kind {
				counted += int(h.GetCount())
				if strings.HasSuffix(h.GetKind(), " element") || strings.Contains(h.GetKind(), "unknown") {
					problems = append(problems, fmt.Sprintf("report counts a fallback kind %q", h.GetKind()))
				}
			}
		}
		if counted != len(k.want) {
			problems = append(problems, fmt.Sprintf("%s: the report counts %d, the dump %d", k.kind, counted, len(k.want)))
		}
	}
	return problems
}

// TestRevitCorpus runs every corpus script plain and split on the add-in's
// runtime on the double: raised at the end and in the middle (rolled back
// exactly, by the double's own table, with the failing line right), as a preview (the document exactly as before, the
// changes as the commit's) and committed (changes and report exactly what
// the table says changed, no fallback kinds); after each, a no-op
// transaction must report nothing.
func TestRevitCorpus(t *testing.T) {
	scored := map[string][2]int{}
	cases := corpusCases()
	for _, c := range cases {
		for _, split := range []bool{false, true} {
			if split && c.setup == "" {
				continue
			}
			name := c.name
			if split {
				name += " (split)"
			}
			t.Run(name, func(t *testing.T) {
				r := startRuntime(t, 2026)
				body := corpusPrelude + c.setup + c.body
				if split {
					if res := r.run("MODE_TRANSACTION", corpusPrelude+c.setup, false); !res.GetCommitted() {
						t.Fatalf("the first part failed: %v", res.GetError())
					}
					body = corpusPrelude + c.body
				}
				score := func(check string, problems []string) {
					t.Helper()
					key := check + map[bool]string{false: " (plain)", true: " (split)"}[split]
					s := scored[key]
					s[1]++
					if len(problems) == 0 {
						s[0]++
					} else {
						t.Errorf("%s: %s", check, strings.Join(problems, "; "))
					}
					scored[key] = s
				}
				noop := func(after string) {
					t.Helper()
					d := r.corpusDump()
					res := r.run("MODE_TRANSACTION", "pass", false)
					score("no-op after "+after, scoreChanges(res, d, r.corpusDump()))
				}
				rollback := func(check string, res *hostv1.HostResult, before corpusDump) {
					t.Helper()
					var problems []string
					if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT {
						problems = append(problems, fmt.Sprintf("the runtime says %v %v", res.GetRollback(), res.GetRollbackDifferences()))
					}
					if a, m, d := dumpChanges(before, r.corpusDump()); len(a)+len(m)+len(d) > 0 {
						problems = append(problems, fmt.Sprintf("the table differs: added %v modified %v deleted %v", a, m, d))
					}
					score(check, problems)
				}

				before := r.corpusDump()
				head := strings.TrimSuffix(body, c.body)
				lines := strings.SplitAfter(strings.TrimSuffix(c.body, "\n"), "\n")
				for _, at := range []struct {
					where string
					n     int
				}{{"raise at the end", len(lines)}, {"raise in the middle", len(lines) / 2}} {
					code := head + strings.Join(lines[:at.n], "")
					if !strings.HasSuffix(code, "\n") {
						code += "\n"
					}
					line := strings.Count(code, "\n") + 1
					code += "raise RuntimeError('corpus: raised on purpose')\n" + strings.Join(lines[at.n:], "")
					res := r.run("MODE_TRANSACTION", code, false)
					if res.GetCommitted() || res.GetError().GetType() != "RuntimeError" {
						t.Fatalf("%s: want an uncommitted RuntimeError, got %v", at.where, res.GetError())
					}
					var wrong []string
					if res.GetError().GetLine() != int32(line) {
						wrong = append(wrong, fmt.Sprintf("want line %d, got %d", line, res.GetError().GetLine()))
					}
					score("failing line ("+at.where+")", wrong)
					rollback("rollback ("+at.where+")", res, before)
					noop("a " + at.where)
				}

				preview := r.run("MODE_PREVIEW", body, false)
				if preview.GetError() != nil {
					t.Fatalf("preview: %v", preview.GetError())
				}
				rollback("preview rollback", preview, before)
				noop("a preview")

				res := r.run("MODE_TRANSACTION", body, false)
				if !res.GetCommitted() {
					t.Fatalf("commit: %v", res.GetError())
				}
				after := r.corpusDump()
				score("changes and report", scoreChanges(res, before, after))
				score("preview changes and report", scoreChanges(preview, before, after))
				noop("the commit")
			})
		}
	}
	keys := make([]string, 0, len(scored))
	for k := range scored {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %d/%d\n", k, scored[k][0], scored[k][1])
	}
	t.Logf("%d scripts:\n%s", len(cases), b.String())
}
