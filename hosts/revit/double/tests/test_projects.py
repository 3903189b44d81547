"""Generated projects (revitdouble.projects) hold rooms and sheets in a
building's proportions, and a room's Area reads from the document's wall
index (wallindex.py): what a scan of every wall on the level answers, kept
current through changes, rollbacks and deletions, at a cost that does not
grow with the project."""
import unittest

from Autodesk.Revit.DB import (BuiltInCategory, BuiltInParameter, ElementId, FilteredElementCollector, Line,
                               SpatialElementBoundaryOptions, Transaction, ViewSheet, Viewport, Wall, XYZ)
from Autodesk.Revit.DB.Architecture import Room
from revitdouble import Session
from revitdouble.projects import CELL_X, CELL_Y


def scanned_area(doc, room):
    """A room's area at the finish faces from a scan of every wall of the
    document: the nearest wall that spans the room's point on each side."""
    p, level = room.Location.Point, room.LevelId
    sides = {"w": None, "e": None, "s": None, "n": None}
    for w in FilteredElementCollector(doc).OfClass(Wall):
        if w.LevelId != level:
            continue
        a, b = w.Location.Curve.GetEndPoint(0), w.Location.Curve.GetEndPoint(1)
        half = w.WallType.Width / 2.0
        if abs(a.X - b.X) < 1e-6 and min(a.Y, b.Y) <= p.Y <= max(a.Y, b.Y):
            if a.X < p.X and (sides["w"] is None or a.X > sides["w"][0]):
                sides["w"] = (a.X, half)
            if a.X > p.X and (sides["e"] is None or a.X < sides["e"][0]):
                sides["e"] = (a.X, half)
        elif abs(a.Y - b.Y) < 1e-6 and min(a.X, b.X) <= p.X <= max(a.X, b.X):
            if a.Y < p.Y and (sides["s"] is None or a.Y > sides["s"][0]):
                sides["s"] = (a.Y, half)
            if a.Y > p.Y and (sides["n"] is None or a.Y < sides["n"][0]):
                sides["n"] = (a.Y, half)
    if None in sides.values():
        return 0.0
    w, e, s, n = sides["w"], sides["e"], sides["s"], sides["n"]
    return ((e[0] - e[1]) - (w[0] + w[1])) * ((n[0] - n[1]) - (s[0] + s[1]))


def of_category(doc, bic):
    return list(FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType())


class GeneratedProject(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.session = Session(project=1000)
        cls.doc = cls.session.doc

    def test_rooms_sheets_and_viewports_in_proportion(self):
        doc = self.doc
        rooms, walls = of_category(doc, BuiltInCategory.OST_Rooms), of_category(doc, BuiltInCategory.OST_Walls)
        levels = of_category(doc, BuiltInCategory.OST_Levels)
        # A room for about four walls, on every generated level.
        self.assertEqual((len(rooms), len(walls)), (75, 360))
        self.assertEqual(len({r.LevelId.Value for r in rooms}), len(levels) - 2)
        self.assertTrue(all(isinstance(r, Room) for r in rooms))
        first = min(rooms, key=lambda r: r.Id.Value)
        self.assertEqual((first.Number, first.get_Parameter(BuiltInParameter.ROOM_NAME).AsString(),
                          first.get_Parameter(BuiltInParameter.ROOM_NUMBER).AsString(), first.Level.Name),
                         ("3001", "Office", "3001", "Level 03"))
        sheets = list(FilteredElementCollector(doc).OfClass(ViewSheet))
        self.assertEqual(sorted(s.SheetNumber for s in sheets), ["A101", "A102", "A103", "A901"])
        plans = {v.Value for s in sheets for v in s.GetAllPlacedViews()}
        self.assertEqual(len(plans), len(of_category(doc, BuiltInCategory.OST_Viewports)))
        self.assertEqual(len(plans), 4)
        # Every sheet has its title block (owned by the sheet), and each
        # level's plan is on its own sheet.
        blocks = of_category(doc, BuiltInCategory.OST_TitleBlocks)
        self.assertEqual(sorted(b.OwnerViewId.Value for b in blocks), sorted(s.Id.Value for s in sheets))
        a101 = next(s for s in sheets if s.SheetNumber == "A101")
        self.assertEqual((a101.Name, [doc.GetElement(v).Name for v in a101.GetAllPlacedViews()]),
                         ("Level 03 - Floor Plan", ["Level 03 Plan"]))
        self.assertFalse(Viewport.CanAddViewToSheet(doc, a101.Id, a101.GetAllPlacedViews()[0]))

    def test_every_rooms_area_is_what_a_scan_of_the_walls_answers(self):
        rooms = of_category(self.doc, BuiltInCategory.OST_Rooms)
        for r in rooms:
            self.assertGreater(r.Area, 0.0, r.Number)
            self.assertAlmostEqual(r.Area, scanned_area(self.doc, r), places=9)
            self.assertAlmostEqual(r.get_Parameter(BuiltInParameter.ROOM_AREA).AsDouble(), r.Area, places=9)
        # The first room by hand: its cell less half of each bounding wall.
        first = min(rooms, key=lambda r: r.Id.Value)
        loop = first.GetBoundarySegments(SpatialElementBoundaryOptions())[0]
        half = {i: self.doc.GetElement(s.ElementId).WallType.Width / 2.0 for i, s in enumerate(loop)}
        # Segments run south, east, north, west.
        self.assertAlmostEqual(first.Area, (CELL_X - half[3] - half[1]) * (CELL_Y - half[0] - half[2]), places=9)

    def test_a_rooms_area_looks_at_the_walls_near_it_whatever_the_project(self):
        for n in (1000, 10000):
            doc = self.doc if n == 1000 else Session(project=n).doc
            rooms = of_category(doc, BuiltInCategory.OST_Rooms)
            walls = len(of_category(doc, BuiltInCategory.OST_Walls))
            rooms[0].Area  # the index built
            index = doc._wall_index
            for r in rooms[:50]:
                before = index.examined
                self.assertGreater(r.Area, 0.0)
                # Four sides, a few walls each: never the walls of the level.
                self.assertLessEqual(index.examined - before, 16, "%d of %d walls" % (index.examined - before, walls))


class KeptByChange(unittest.TestCase):
    def setUp(self):
        self.doc = Session(project=1000).doc
        self.room = min(of_category(self.doc, BuiltInCategory.OST_Rooms), key=lambda r: r.Id.Value)
        self.area = self.room.Area
        loop = self.room.GetBoundarySegments(SpatialElementBoundaryOptions())[0]
        self.south, self.east = (self.doc.GetElement(s.ElementId) for s in loop[:2])

    def check(self, expected=None):
        area = self.room.Area
        self.assertAlmostEqual(area, scanned_area(self.doc, self.room), places=9)
        if expected is not None:
            self.assertAlmostEqual(area, expected, places=9)
        return area

    def test_a_moved_wall_a_deleted_one_and_a_rollback(self):
        t = Transaction(self.doc, "move")
        t.Start()
        self.south.Location.Move(XYZ(0, -2.0, 0))
        # Read inside the transaction, before it commits.
        self.check(self.area + 2.0 * (self.room_width()))
        self.south.Location.Move(XYZ(0, -1.0, 0))
        t.Commit()
        self.check(self.area + 3.0 * self.room_width())
        t = Transaction(self.doc, "delete")
        t.Start()
        self.doc.Delete(self.east.Id)
        # The room now runs on to the next wall east, its neighbour's.
        self.assertGreater(self.check(), 1.9 * self.area)
        # With nothing south of it (the level's edge), it is not enclosed.
        self.doc.Delete(self.south.Id)
        self.assertEqual(self.check(), 0.0)
        t.RollBack()
        self.check(self.area + 3.0 * self.room_width())

    def test_a_new_wall_across_the_room_and_a_level_change(self):
        p = self.room.Location.Point
        t = Transaction(self.doc, "split")
        t.Start()
        across = Wall.Create(self.doc, Line.CreateBound(XYZ(p.X - 30, p.Y + 2.0, 0), XYZ(p.X + 30, p.Y + 2.0, 0)),
                             self.room.LevelId, False)
        smaller = self.check()
        self.assertLess(smaller, self.area)
        other = next(l for l in of_category(self.doc, BuiltInCategory.OST_Levels) if l.Id != self.room.LevelId)
        across.get_Parameter(BuiltInParameter.WALL_BASE_CONSTRAINT).Set(other.Id)
        self.check(self.area)
        t.Commit()
        self.check(self.area)

    def room_width(self):
        loop = self.room.GetBoundarySegments(SpatialElementBoundaryOptions())[0]
        return loop[0].GetCurve().Length


if __name__ == "__main__":
    unittest.main()
