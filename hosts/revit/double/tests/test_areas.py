"""The areas the article's tasks need: curtain walls, rooms, schedules,
sheets and viewports, tags, phases, type changes and families that outlive
their host, each as the Revit API reference states it (the modules cite
the pages)."""
import unittest

from Autodesk.Revit.DB import (BuiltInCategory, ElementFilter, ElementId, FamilyInstance, FamilyPlacementType, FamilySymbol,
                               FilteredElementCollector, HostObjectUtils, IndependentTag, Level, Line, MullionType,
                               Reference, ScheduleFieldType, ShellLayerType, SpatialElementBoundaryLocation,
                               SpatialElementBoundaryOptions, TagMode, TagOrientation, Transaction, UV, ViewPlan,
                               ViewSchedule, ViewSheet, Viewport, Wall, WallType, XYZ)
from Autodesk.Revit.DB.Architecture import Room
from Autodesk.Revit.DB.Structure import StructuralType
from Autodesk.Revit.Exceptions import ArgumentException, InvalidOperationException
from revitdouble import Session

MM = 1.0 / 304.8


class Areas(unittest.TestCase):
    def setUp(self):
        self.s = Session()
        self.doc = self.s.doc
        self.t = Transaction(self.doc, "test")
        self.t.Start()
        self.addCleanup(lambda: self.t.HasStarted() and self.t.RollBack())
        self.l1 = [l for l in FilteredElementCollector(self.doc).OfClass(Level) if l.Name == "Level 1"][0]

    def wall(self, a, b, type_name="Generic - 200mm", height=3000):
        wt = [t for t in FilteredElementCollector(self.doc).OfClass(WallType) if t.Name == type_name][0]
        return Wall.Create(self.doc, Line.CreateBound(XYZ(a[0] * MM, a[1] * MM, 0), XYZ(b[0] * MM, b[1] * MM, 0)),
                           wt.Id, self.l1.Id, height * MM, 0.0, False, False)

    def symbol(self, bic):
        s = FilteredElementCollector(self.doc).OfClass(FamilySymbol).OfCategory(bic).FirstElement()
        s.Activate()
        return s

    def test_curtain_grid(self):
        basic = self.wall((0, 0), (6000, 0))
        self.assertIsNone(basic.CurtainGrid)
        cw = self.wall((0, 5000), (6000, 5000), "Curtain Wall 1", 4000)
        grid = cw.CurtainGrid
        self.assertEqual(grid.NumPanels, 1)
        for x in (1500, 3000, 4500):
            grid.AddGridLine(False, XYZ(x * MM, 5000 * MM, 0), False)
        u = grid.AddGridLine(True, XYZ(0, 5000 * MM, 2000 * MM), False)
        self.assertEqual((grid.NumVLines, grid.NumULines, grid.NumPanels), (3, 1, 8))
        self.assertEqual(len(grid.GetPanelIds()), 8)
        with self.assertRaises(InvalidOperationException):
            grid.AddGridLine(False, XYZ(7000 * MM, 5000 * MM, 0), False)
        mt = FilteredElementCollector(self.doc).OfClass(MullionType).FirstElement()
        made = u.AddMullions(u.FullCurve, mt, False)
        self.assertEqual(len(made), 1)
        self.assertEqual(len(grid.GetMullionIds()), 1)
        gone = self.doc.Delete(cw.Id)
        self.assertEqual(len(gone), 1 + 4 + 1 + 8)

    def test_room_area_and_boundaries(self):
        for a, b in (((0, 0), (6000, 0)), ((6000, 0), (6000, 4000)), ((6000, 4000), (0, 4000)), ((0, 4000), (0, 0))):
            self.wall(a, b)
        room = self.doc.Create.NewRoom(self.l1, UV(3000 * MM, 2000 * MM))
        self.assertIsInstance(room, Room)
        # At the finish faces of 200 mm walls: 5800 x 3800 mm.
        self.assertAlmostEqual(room.Area / (MM * MM) / 1e6, 5.8 * 3.8, places=6)
        loops = room.GetBoundarySegments(SpatialElementBoundaryOptions())
        self.assertEqual(len(loops), 1)
        self.assertEqual(len(loops[0]), 4)
        opts = SpatialElementBoundaryOptions()
        opts.SpatialElementBoundaryLocation = SpatialElementBoundaryLocation.Center
        self.assertAlmostEqual(sum(s.GetCurve().Length for s in room.GetBoundarySegments(opts)[0]) / MM, 20000, places=3)
        outside = self.doc.Create.NewRoom(self.l1, UV(9000 * MM, 2000 * MM))
        self.assertEqual(outside.Area, 0.0)
        self.assertEqual(len(outside.GetBoundarySegments(SpatialElementBoundaryOptions())), 0)
        self.assertEqual((room.Number, outside.Number), ("1", "2"))

    def test_schedule(self):
        s = ViewSchedule.CreateSchedule(self.doc, ElementId(int(BuiltInCategory.OST_Doors)))
        self.assertEqual(s.Name, "Door Schedule")
        d = s.Definition
        names = [f.GetName(self.doc) for f in d.GetSchedulableFields()]
        self.assertIn("Mark", names)
        mark = [f for f in d.GetSchedulableFields() if f.GetName(self.doc) == "Mark"][0]
        d.AddField(mark)
        self.assertEqual((d.GetFieldCount(), d.GetField(0).GetName()), (1, "Mark"))
        with self.assertRaises(ArgumentException):
            ViewSchedule.CreateSchedule(self.doc, ElementId(int(BuiltInCategory.OST_Levels)))
        self.assertEqual(mark.FieldType, ScheduleFieldType.Instance)

    def test_sheet_and_viewport(self):
        tb = FilteredElementCollector(self.doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_TitleBlocks).FirstElement()
        sheet = ViewSheet.Create(self.doc, tb.Id)
        sheet.SheetNumber = "A101"
        plan = [v for v in FilteredElementCollector(self.doc).OfClass(ViewPlan) if v.Name == "Level 1"][0]
        self.assertTrue(Viewport.CanAddViewToSheet(self.doc, sheet.Id, plan.Id))
        vp = Viewport.Create(self.doc, sheet.Id, plan.Id, XYZ(1, 1, 0))
        self.assertEqual([i.Value for i in sheet.GetAllPlacedViews()], [plan.Id.Value])
        self.assertFalse(Viewport.CanAddViewToSheet(self.doc, sheet.Id, plan.Id))
        with self.assertRaises(ArgumentException):
            Viewport.Create(self.doc, ViewSheet.Create(self.doc, ElementId.InvalidElementId).Id, plan.Id, XYZ(0, 0, 0))
        self.assertEqual(vp.ViewId, plan.Id)

    def test_tag_follows_its_door(self):
        w = self.wall((0, 0), (6000, 0))
        door = self.doc.Create.NewFamilyInstance(XYZ(1, 0, 0), self.symbol(BuiltInCategory.OST_Doors), w, self.l1,
                                                 StructuralType.NonStructural)
        door.get_Parameter(__import__("Autodesk.Revit.DB", fromlist=["BuiltInParameter"]).BuiltInParameter.ALL_MODEL_MARK).Set("D1")
        plan = [v for v in FilteredElementCollector(self.doc).OfClass(ViewPlan) if v.Name == "Level 1"][0]
        tag = IndependentTag.Create(self.doc, plan.Id, Reference(door), False, TagMode.TM_ADDBY_CATEGORY,
                                    TagOrientation.Horizontal, XYZ(1, 1, 0))
        self.assertEqual((tag.TagText, tag.TaggedLocalElementId), ("D1", door.Id))
        self.assertEqual(tag.Category.Name, "Door Tags")
        gone = {i.Value for i in self.doc.Delete(w.Id)}
        self.assertEqual(gone, {w.Id.Value, door.Id.Value, tag.Id.Value})

    def test_phases(self):
        names = [p.Name for p in self.doc.Phases]
        self.assertEqual(names, ["Existing", "New Construction"])
        w = self.wall((0, 0), (6000, 0))
        existing, new = list(self.doc.Phases)
        self.assertEqual(w.CreatedPhaseId, new.Id)
        w.CreatedPhaseId = existing.Id
        w.DemolishedPhaseId = new.Id
        with self.assertRaises(ArgumentException):
            w.CreatedPhaseId = new.Id
            w.DemolishedPhaseId = existing.Id

    def test_change_type_id(self):
        w = self.wall((0, 0), (6000, 0))
        brick = [t for t in FilteredElementCollector(self.doc).OfClass(WallType) if t.Name == "Exterior - Brick on CMU"][0]
        self.assertEqual(w.ChangeTypeId(brick.Id), ElementId.InvalidElementId)
        self.assertEqual(w.WallType.Name, "Exterior - Brick on CMU")
        door_type = self.symbol(BuiltInCategory.OST_Doors)
        with self.assertRaises(ArgumentException):
            w.ChangeTypeId(door_type.Id)

    def test_face_based_instance_outlives_its_host(self):
        w = self.wall((0, 0), (6000, 0))
        light = self.symbol(BuiltInCategory.OST_LightingFixtures)
        self.assertEqual(light.Family.FamilyPlacementType, FamilyPlacementType.WorkPlaneBased)
        face = HostObjectUtils.GetSideFaces(w, ShellLayerType.Exterior)[0]
        inst = self.doc.Create.NewFamilyInstance(face, XYZ(1, 0, 5), XYZ.BasisX, light)
        self.assertEqual((inst.Host.Id, inst.HostFace.ElementId), (w.Id, w.Id))
        gone = {i.Value for i in self.doc.Delete(w.Id)}
        self.assertEqual(gone, {w.Id.Value})
        self.assertTrue(inst.IsValidObject)
        self.assertIsNone(inst.Host)
        self.assertIsNone(inst.HostFace)
        desk = self.symbol(BuiltInCategory.OST_Furniture)
        self.assertEqual(desk.Family.FamilyPlacementType, FamilyPlacementType.OneLevelBased)
        with self.assertRaises(ArgumentException):
            self.doc.Create.NewFamilyInstance(face, XYZ(1, 0, 5), XYZ.BasisX, desk)

    def test_filters(self):
        from Autodesk.Revit.DB import (ElementCategoryFilter, ElementClassFilter, ElementIsElementTypeFilter,
                                       ElementLevelFilter, ExclusionFilter, LogicalAndFilter, LogicalOrFilter)
        from System.Collections.Generic import List
        w = self.wall((0, 0), (6000, 0))
        door = self.doc.Create.NewFamilyInstance(XYZ(1, 0, 0), self.symbol(BuiltInCategory.OST_Doors), w, self.l1,
                                                 StructuralType.NonStructural)
        walls_or_doors = LogicalOrFilter(ElementCategoryFilter(BuiltInCategory.OST_Walls),
                                         ElementCategoryFilter(BuiltInCategory.OST_Doors))
        got = FilteredElementCollector(self.doc).WherePasses(walls_or_doors).WherePasses(
            ElementIsElementTypeFilter(True)).ToElementIds()
        self.assertEqual(sorted(i.Value for i in got), sorted([w.Id.Value, door.Id.Value]))
        on_l1 = LogicalAndFilter(List[ElementFilter]([ElementClassFilter(FamilyInstance), ElementLevelFilter(self.l1.Id)]))
        self.assertEqual([e.Id for e in FilteredElementCollector(self.doc).WherePasses(on_l1)], [door.Id])
        self.assertTrue(ElementCategoryFilter(BuiltInCategory.OST_Doors).PassesFilter(self.doc, door.Id))
        self.assertFalse(ElementCategoryFilter(BuiltInCategory.OST_Doors, True).PassesFilter(door))
        ids = List[ElementId]([door.Id])
        self.assertNotIn(door.Id, FilteredElementCollector(self.doc).WherePasses(ExclusionFilter(ids))
                         .WhereElementIsNotElementType().ToElementIds())
        with self.assertRaises(TypeError):
            List[ElementId]([door])


if __name__ == "__main__":
    unittest.main()
