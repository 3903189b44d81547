package revit

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// revitExample is how one code span of the Revit guidance is run and what
// its text promises. The span runs verbatim: as an expression (its value is
// RESULT) or as statements, inside as when as is set ({} marks the span).
type revitExample struct {
	// given binds what the span names but does not make (wall, symbol, el).
	given string
	as    string
	// fill stands in for an elision the text writes as "...".
	fill string
	// then asserts what the guidance says the span does.
	then string
	// revit is the Revit version the span is written for (the text says
	// which); zero means the newest the double plays.
	revit int
}

// revitGiven are the names the guidance's spans use: the API loaded, the
// seeded project's first level, its default wall type and a door type.
const revitGiven = `import clr
clr.AddReference("RevitAPI")
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB import Structure
level = sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)[0]
wall_type = FilteredElementCollector(doc).OfClass(WallType).FirstElement()
symbol = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()
height_ft = UnitUtils.ConvertToInternalUnits(3000, UnitTypeId.Millimeters)
`

// revitWall makes the wall and the door the door spans name.
const revitWall = "wall = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(20, 0, 0)), wall_type.Id, level.Id, height_ft, 0.0, False, False)\n"
const revitDoor = revitWall + "if not symbol.IsActive: symbol.Activate()\ninstance = doc.Create.NewFamilyInstance(XYZ(5, 0, 0), symbol, wall, level, Structure.StructuralType.NonStructural)\nel = instance\n"

// revitGuidanceExamples covers every code span of revit_guidance.md that
// calls, assigns or names a member; a span the table does not cover fails
// the test, so new guidance comes with its proof.
func revitGuidanceExamples() map[string]revitExample {
	return map[string]revitExample{
		// Revit raises DocumentChanged only when a transaction commits, so a
		// script sees the keys, empty; the epilogue's are shown by
		// TestArticleScriptOnTheDouble's change report.
		"nexus_changes()": {given: revitWall,
			then: "c = RESULT\nassert {'added', 'modified', 'deleted', 'changed', 'warnings'} <= set(c), c\n" +
				"assert c['added'] == c['modified'] == c['deleted'] == c['changed'] == [], 'empty until the add-in commits: %s' % c"},
		`import clr; clr.AddReference("RevitAPI"); from Autodesk.Revit.DB import *`: {then: "assert Wall and XYZ and FilteredElementCollector and UnitUtils"},
		"Autodesk.Revit.DB.Document": {given: "import Autodesk.Revit.DB", then: "assert isinstance(doc, RESULT)"},
		"UnitUtils.ConvertToInternalUnits(3000, UnitTypeId.Millimeters)": {
			then: "assert abs(RESULT - 3000 / 304.8) < 1e-9, RESULT"},
		"UnitUtils.ConvertFromInternalUnits": {
			then: "assert abs(RESULT(10.0, UnitTypeId.Millimeters) - 3048) < 1e-9"},
		"FilteredElementCollector(doc).OfClass(Level)": {
			then: "names = [l.Name for l in sorted(RESULT, key=lambda l: l.Elevation)]\nassert names == ['Level 1', 'Level 2'], names"},
		"level.Elevation": {given: "level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == 'Level 2'][0]",
			then: "assert abs(RESULT - 4000 / 304.8) < 1e-9, 'feet, not millimetres: %s' % RESULT"},
		"FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType()": {given: revitWall,
			then: "assert [w.Id for w in RESULT] == [wall.Id]"},
		".OfClass(WallType)": {as: "FilteredElementCollector(doc){}",
			then: "names = sorted(t.Name for t in RESULT)\nassert 'Generic - 200mm' in names and all(isinstance(t, WallType) for t in RESULT), names"},
		"OfCategory(BuiltInCategory.OST_Doors)": {given: revitDoor, as: "FilteredElementCollector(doc).{}.WhereElementIsNotElementType()",
			then: "assert [d.Id for d in RESULT] == [instance.Id]"},
		".OfClass(FamilySymbol).OfCategory(...)": {as: "FilteredElementCollector(doc){}", fill: "BuiltInCategory.OST_Windows",
			then: "syms = list(RESULT)\nassert syms and all(isinstance(s, FamilySymbol) and s.Category.BuiltInCategory == BuiltInCategory.OST_Windows for s in syms), syms"},
		"instance.Host":    {given: revitDoor, then: "assert RESULT.Id == wall.Id"},
		"instance.LevelId": {given: revitDoor, then: "assert RESULT == level.Id"},
		"doc.GetElement(el.GetTypeId())": {given: revitDoor,
			then: "assert RESULT.Id == symbol.Id\nel_type = RESULT"},
		"el_type.FamilyName": {given: revitDoor + "el_type = doc.GetElement(el.GetTypeId())\n",
			then: "assert RESULT == 'Single-Flush', RESULT"},
		"doc.GetElement(el.LevelId)": {given: revitDoor, then: "assert RESULT.Name == 'Level 1'"},
		"Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(20, 0, 0)), wall_type.Id, level.Id, height_ft, 0.0, False, False)": {
			then: "c = RESULT.Location.Curve\nassert (c.GetEndPoint(0).X, c.GetEndPoint(1).X) == (0, 20) and RESULT.LevelId == level.Id and RESULT.GetTypeId() == wall_type.Id\n" +
				"h = RESULT.get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM).AsDouble()\nassert abs(h - height_ft) < 1e-9, h"},
		"if not symbol.IsActive: symbol.Activate()": {then: "assert symbol.IsActive"},
		"doc.Create.NewFamilyInstance(XYZ(x, y, 0), symbol, wall, level, Structure.StructuralType.NonStructural)": {
			given: revitWall + "symbol.Activate()\nx, y = 5, 0",
			then:  "assert RESULT.Host.Id == wall.Id and RESULT.LevelId == level.Id and RESULT.Location.Point.X == 5 and RESULT.Category.BuiltInCategory == BuiltInCategory.OST_Doors"},
		"doc.GetElement(ElementId(int(s)))": {given: revitWall + "s = str(wall.Id.Value)", then: "assert RESULT.Id == wall.Id"},
		"el.Id.Value":                       {given: revitWall + "el = wall", then: "assert isinstance(RESULT, int) and doc.GetElement(ElementId(RESULT)).Id == wall.Id"},
		"el.Id.IntegerValue":                {given: revitWall + "el = wall", revit: 2023, then: "assert isinstance(RESULT, int) and doc.GetElement(ElementId(RESULT)).Id == wall.Id"},
		// The seeded project is not workshared; Workshared in tests/test_scale.py
		// edits an element another user owns.
		"doc.IsWorkshared": {then: "assert RESULT is False"},
		"WorksharingUtils.GetCheckoutStatus(doc, el.Id)": {given: revitWall + "el = wall",
			then: "assert RESULT == CheckoutStatus.NotOwned, RESULT"},
		"CheckoutStatus.OwnedByOtherUser": {then: "assert RESULT != CheckoutStatus.OwnedByCurrentUser and RESULT != CheckoutStatus.NotOwned"},
		// The add-in answers the dialog while the script runs: it never waits.
		"TaskDialog.Show": {given: "from Autodesk.Revit.UI import TaskDialog",
			then: "assert str(RESULT('Nexus', 'Delete the old sheets?')) == 'Cancel'"},
	}
}

// revitCode tells a span to run from a name, a value or a result's shape.
var revitCode = regexp.MustCompile(`^(\(|[A-Za-z_.]*\(|import |doc\.|if |\.|[A-Za-z_]+(\.[A-Za-z_]+)+$)`)

// TestRevitGuidanceExamplesRun extracts every code span of the Revit
// guidance the model is taught and runs each on the add-in's runtime on the
// double, in a preview (rolled back after), checking that it does what the
// text says.
func TestRevitGuidanceExamplesRun(t *testing.T) {
	raw, err := os.ReadFile("../../services/capability/hosts/revit_guidance.md")
	if err != nil {
		t.Fatal(err)
	}
	table := revitGuidanceExamples()
	var spans []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(string(raw), -1) {
		s := m[1]
		if !revitCode.MatchString(s) || seen[s] {
			continue
		}
		seen[s] = true
		spans = append(spans, s)
		if _, ok := table[s]; !ok {
			t.Errorf("the guidance teaches %q, which no example of this test runs: add it to revitGuidanceExamples with what its text says it does", s)
		}
	}
	for s := range table {
		if !seen[s] {
			t.Errorf("revitGuidanceExamples covers %q, which the guidance no longer holds", s)
		}
	}
	runtimes := map[int]*runtime{}
	for _, ex := range table {
		if ex.revit == 0 {
			ex.revit = 2026
		}
		if runtimes[ex.revit] == nil {
			runtimes[ex.revit] = startRuntime(t, ex.revit)
		}
	}
	for _, s := range spans {
		ex, ok := table[s]
		if !ok {
			continue
		}
		t.Run(s, func(t *testing.T) {
			snippet := s
			if ex.fill != "" {
				snippet = strings.ReplaceAll(snippet, "...", ex.fill)
			}
			if ex.as != "" {
				snippet = strings.ReplaceAll(ex.as, "{}", snippet)
			}
			quoted, _ := json.Marshal(snippet)
			code := revitGiven + ex.given + "\nSNIPPET = " + string(quoted) + "\n" +
				"try:\n    RESULT = eval(compile(SNIPPET, '<guidance>', 'eval'), globals())\n" +
				"except SyntaxError:\n    RESULT = None\n    exec(compile(SNIPPET, '<guidance>', 'exec'), globals())\n" + ex.then + "\n"
			version := ex.revit
			if version == 0 {
				version = 2026
			}
			r := runtimes[version]
			r.t = t
			res := r.run("MODE_PREVIEW", code, false)
			if e := res.GetError(); e != nil {
				t.Fatalf("%s: %s (line %d)\n%s\n%s", e.GetType(), e.GetMessage(), e.GetLine(), code, res.GetStdout())
			}
		})
	}
}
