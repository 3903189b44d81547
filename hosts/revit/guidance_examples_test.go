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

// revitCurtain makes a curtain wall 20 ft long and 20 ft high, and its grid.
const revitCurtain = "cwt = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == 'Curtain Wall 1'][0]\n" +
	"wall = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(20, 0, 0)), cwt.Id, level.Id, 20.0, 0.0, False, False)\ngrid = wall.CurtainGrid\n"

// revitRoomWalls encloses 20 x 10 ft (between location lines) on level 1;
// x, y is inside.
const revitRoomWalls = "for a, b in (((0, 0), (20, 0)), ((20, 0), (20, 10)), ((20, 10), (0, 10)), ((0, 10), (0, 0))):\n" +
	"    Wall.Create(doc, Line.CreateBound(XYZ(a[0], a[1], 0), XYZ(b[0], b[1], 0)), wall_type.Id, level.Id, height_ft, 0.0, False, False)\n" +
	"x, y = 10, 5\nfinish = (20 - 200 / 304.8) * (10 - 200 / 304.8)\n"
const revitRoom = revitRoomWalls + "room = doc.Create.NewRoom(level, UV(x, y))\n"

// revitSchedule and revitSheet make what the schedule and sheet spans name.
const revitSchedule = "schedule = ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Doors))\n"
const revitSheet = "sheet = ViewSheet.Create(doc, ElementId.InvalidElementId)\n" +
	"plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel.Id == level.Id][0]\nx, y = 1, 1\n"

// revitRaises asserts that the statement raises the Revit exception named.
func revitRaises(stmt, exc string) string {
	return "try:\n    " + stmt + "\n    raise AssertionError('no exception')\nexcept Exception as e:\n    assert type(e).__name__ == '" + exc + "', repr(e)\n"
}

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

		// Curtain walls.
		"wall.CurtainGrid": {given: revitCurtain, then: "assert RESULT is not None and RESULT.NumPanels == 1\n" +
			"b = Wall.Create(doc, Line.CreateBound(XYZ(0, 5, 0), XYZ(20, 5, 0)), wall_type.Id, level.Id, height_ft, 0.0, False, False)\nassert b.CurtainGrid is None"},
		"grid.AddGridLine(False, XYZ(x, y, 0), False)": {given: revitCurtain + "x, y = 5, 0\n",
			then: "assert not RESULT.IsUGridLine and RESULT.FullCurve.GetEndPoint(0).X == 5 and grid.NumVLines == 1"},
		"grid.AddGridLine(True, XYZ(0, 0, z), False)": {given: revitCurtain + "z = 8\n",
			then: "assert RESULT.IsUGridLine and abs(RESULT.FullCurve.GetEndPoint(0).Z - 8) < 1e-9 and grid.NumULines == 1\n" +
				revitRaises("grid.AddGridLine(True, XYZ(0, 0, 50), False)", "InvalidOperationException")},
		"line.AddMullions(line.FullCurve, mullion_type, False)": {given: revitCurtain + "line = grid.AddGridLine(False, XYZ(5, 0, 0), False)\n" +
			"mullion_type = FilteredElementCollector(doc).OfClass(MullionType).FirstElement()\n",
			then: "assert len(RESULT) == 1 and RESULT[0].MullionType.Id == mullion_type.Id and list(grid.GetMullionIds()) == [RESULT[0].Id]"},
		"FilteredElementCollector(doc).OfClass(MullionType)": {then: "assert [m.Name for m in RESULT] == ['50 x 150mm']"},
		"grid.GetMullionIds()":                               {given: revitCurtain, then: "assert list(RESULT) == []"},
		"grid.NumPanels": {given: revitCurtain + "grid.AddGridLine(False, XYZ(5, 0, 0), False)\ngrid.AddGridLine(True, XYZ(0, 0, 8), False)\n",
			then: "assert RESULT == 4 and len(grid.GetPanelIds()) == 4, RESULT"},

		// Rooms.
		"doc.Create.NewRoom(level, UV(x, y))": {given: revitRoomWalls,
			then: "assert abs(RESULT.Area - finish) < 1e-9, RESULT.Area\nassert doc.Create.NewRoom(level, UV(50, 5)).Area == 0"},
		"room.Area": {given: revitRoom, then: "assert abs(RESULT - finish) < 1e-9, RESULT"},
		"FilteredElementCollector(doc).OfClass(Room)": {given: "from Autodesk.Revit.DB.Architecture import Room\n" + revitRoom,
			then: "assert [r.Id for r in RESULT] == [room.Id]"},
		"UnitUtils.ConvertFromInternalUnits(room.Area, UnitTypeId.SquareMeters)": {given: revitRoom,
			then: "assert abs(RESULT - finish * 0.09290304) < 1e-9, RESULT"},
		"room.Number": {given: revitRoom, then: "assert RESULT == '1', RESULT"},
		`room.get_Parameter(BuiltInParameter.ROOM_NAME).Set("Office")`: {given: revitRoom,
			then: "assert room.get_Parameter(BuiltInParameter.ROOM_NAME).AsString() == 'Office' and room.Name == 'Office'"},
		"room.GetBoundarySegments(SpatialElementBoundaryOptions())": {given: revitRoom,
			then: "loops = list(RESULT)\nassert len(loops) == 1 and len(loops[0]) == 4, loops\n" +
				"assert {s.ElementId for s in loops[0]} == {w.Id for w in FilteredElementCollector(doc).OfClass(Wall)}"},
		"GetCurve()": {given: revitRoom, as: "room.GetBoundarySegments(SpatialElementBoundaryOptions())[0][0].{}",
			then: "assert isinstance(RESULT, Line) and RESULT.Length > 0"},

		// Schedules, sheets, tags.
		"ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Doors))": {
			then: "assert isinstance(RESULT, ViewSchedule) and RESULT.Definition.CategoryId == ElementId(BuiltInCategory.OST_Doors) and RESULT.Definition.GetFieldCount() == 0"},
		"schedule.Definition.GetSchedulableFields()": {given: revitSchedule,
			then: "names = [f.GetName(doc) for f in RESULT]\nassert {'Mark', 'Level', 'Type'} <= set(names), names"},
		"schedule.Definition.AddField(f)": {given: revitSchedule + "f = [f for f in schedule.Definition.GetSchedulableFields() if f.GetName(doc) == 'Level'][0]\n",
			then: "assert RESULT.GetName() == 'Level' and schedule.Definition.GetFieldCount() == 1"},
		"f.GetName(doc)": {given: revitSchedule + "f = schedule.Definition.GetSchedulableFields()[0]\n", then: "assert RESULT == 'Mark', RESULT"},
		"ViewSheet.Create(doc, title_block.Id)": {
			given: "title_block = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_TitleBlocks).FirstElement()\n",
			then: "blocks = [e for e in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_TitleBlocks).WhereElementIsNotElementType() if e.OwnerViewId == RESULT.Id]\n" +
				"assert isinstance(RESULT, ViewSheet) and [b.GetTypeId() for b in blocks] == [title_block.Id], blocks"},
		"ElementId.InvalidElementId": {then: "assert RESULT.Value == -1\nassert isinstance(ViewSheet.Create(doc, RESULT), ViewSheet)"},
		"Viewport.Create(doc, sheet.Id, plan.Id, XYZ(x, y, 0))": {given: revitSheet,
			then: "assert RESULT.SheetId == sheet.Id and RESULT.ViewId == plan.Id and list(sheet.GetAllPlacedViews()) == [plan.Id]\n" +
				revitRaises("Viewport.Create(doc, sheet.Id, plan.Id, XYZ(x, y, 0))", "ArgumentException")},
		"Viewport.CanAddViewToSheet(doc, sheet.Id, plan.Id)": {given: revitSheet,
			then: "assert RESULT is True\nViewport.Create(doc, sheet.Id, plan.Id, XYZ(1, 1, 0))\nassert not Viewport.CanAddViewToSheet(doc, sheet.Id, plan.Id)"},
		"plan.GenLevel": {given: "plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.Name == 'Level 1'][0]\n",
			then: "assert RESULT.Id == level.Id"},
		"IndependentTag.Create(doc, plan.Id, Reference(door), False, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, door.Location.Point)": {
			given: revitDoor + "door = instance\nplan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel.Id == level.Id][0]\n",
			then: "assert RESULT.TaggedLocalElementId == door.Id and RESULT.OwnerViewId == plan.Id and not RESULT.HasLeader\n" +
				"v3 = FilteredElementCollector(doc).OfClass(View3D).FirstElement()\n" +
				revitRaises("IndependentTag.Create(doc, v3.Id, Reference(door), False, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, door.Location.Point)", "ArgumentException")},

		// Phases, types, hosts.
		"doc.Phases": {then: "assert [p.Name for p in RESULT] == ['Existing', 'New Construction']"},
		"el.DemolishedPhaseId": {given: revitWall + "el = wall\n",
			then: "phases = list(doc.Phases)\nassert RESULT == ElementId.InvalidElementId and el.CreatedPhaseId == phases[-1].Id\n" +
				"el.CreatedPhaseId = phases[0].Id\nel.DemolishedPhaseId = phases[1].Id\nassert el.DemolishedPhaseId == phases[1].Id\n" +
				revitRaises("el.CreatedPhaseId = phases[1].Id; el.DemolishedPhaseId = phases[0].Id", "ArgumentException")},
		"el.ChangeTypeId(new_type.Id)": {given: revitDoor + "el.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set('D7')\n" +
			"new_type = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors) if s.Id != symbol.Id][0]\nold_id = el.Id\n",
			then: "assert RESULT == ElementId.InvalidElementId and el.Id == old_id and el.GetTypeId() == new_type.Id and el.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).AsString() == 'D7'"},
		"FamilyPlacementType.OneLevelBased": {
			then: "desk = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Furniture).FirstElement()\n" +
				"light = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_LightingFixtures).FirstElement()\n" +
				"assert desk.Family.FamilyPlacementType == RESULT and light.Family.FamilyPlacementType == FamilyPlacementType.WorkPlaneBased"},
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
