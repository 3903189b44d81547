"""The double's elements, ids, collector, units and export."""
import os
import tempfile
import unittest

from Autodesk.Revit.DB import (BuiltInCategory, BuiltInParameter, ElementId, ExportRange, FamilySymbol,
                               FilteredElementCollector, ImageExportOptions, Level, Line, Transaction, UnitTypeId,
                               UnitUtils, View3D, Wall, WallType, XYZ)
from Autodesk.Revit.DB.Structure import StructuralType
from Autodesk.Revit.Exceptions import (ArgumentException, ArgumentsInconsistentException, InvalidObjectException,
                                       InvalidOperationException, ModificationOutsideTransactionException)
from revitdouble import Session


class Elements(unittest.TestCase):
    def setUp(self):
        self.s = Session()
        self.doc = self.s.doc
        self.level = FilteredElementCollector(self.doc).OfClass(Level).FirstElement()
        self.t = Transaction(self.doc, "test")
        self.t.Start()

    def tearDown(self):
        if self.t.HasStarted():
            self.t.RollBack()

    def door_symbol(self):
        return FilteredElementCollector(self.doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()

    def test_the_articles_script_runs_unchanged(self):
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), self.level.Id, False)
        symbol = self.door_symbol()
        if not symbol.IsActive:
            symbol.Activate()
        door = self.doc.Create.NewFamilyInstance(XYZ(5, 0, 0), symbol, w, self.level, StructuralType.NonStructural)
        self.assertEqual(door.Host.Id, w.Id)
        self.assertEqual(door.LevelId, self.level.Id)
        self.assertEqual(w.Name, "Generic - 200mm")
        self.assertEqual(w.WallType.FamilyName, "Basic Wall")
        self.assertEqual(self.doc.GetElement(w.GetTypeId()).Name, "Generic - 200mm")
        self.assertEqual(w.Category.Name, "Walls")
        self.assertEqual(door.Category.Name, "Doors")
        self.assertEqual([i.Value for i in w.FindInserts(True, False, False, False)], [door.Id.Value])

    def test_inactive_symbol_is_refused(self):
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), self.level.Id, False)
        with self.assertRaises(ArgumentException):
            self.doc.Create.NewFamilyInstance(XYZ(5, 0, 0), self.door_symbol(), w, self.level,
                                              StructuralType.NonStructural)

    def test_internal_units_are_feet(self):
        length = UnitUtils.ConvertToInternalUnits(3000, UnitTypeId.Millimeters)
        self.assertAlmostEqual(length, 9.84252, places=5)
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(length, 0, 0)), self.level.Id, False)
        p = w.get_Parameter(BuiltInParameter.CURVE_ELEM_LENGTH)
        self.assertAlmostEqual(p.AsDouble(), length)
        self.assertEqual(p.AsValueString(), "3000")
        self.assertAlmostEqual(UnitUtils.ConvertFromInternalUnits(w.Width, UnitTypeId.Millimeters), 200)
        with self.assertRaises(ArgumentException):
            UnitUtils.ConvertToInternalUnits(float("nan"), UnitTypeId.Millimeters)

    def test_short_line_is_refused(self):
        with self.assertRaises(ArgumentsInconsistentException):
            Line.CreateBound(XYZ(0, 0, 0), XYZ(0.001, 0, 0))

    def test_wall_overload_with_type_and_height(self):
        t = next(wt for wt in FilteredElementCollector(self.doc).OfClass(WallType) if wt.Name == "Generic - 300mm")
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(0, 12, 0)), t.Id, self.level.Id, 9.0, 0.0,
                        False, False)
        self.assertEqual(w.get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM).AsDouble(), 9.0)
        self.assertEqual(w.Name, "Generic - 300mm")
        with self.assertRaises(ArgumentException):
            Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(0, 12, 0)), t.Id, self.level.Id, 0.0, 0.0,
                        False, False)

    def test_parameter_set_needs_a_transaction_and_a_writable_parameter(self):
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), self.level.Id, False)
        w.LookupParameter("Comments").Set("north")
        with self.assertRaises(InvalidOperationException):
            w.get_Parameter(BuiltInParameter.CURVE_ELEM_LENGTH).Set(3.0)
        self.t.Commit()
        with self.assertRaises(ModificationOutsideTransactionException):
            w.LookupParameter("Comments").Set("south")
        self.assertEqual(w.LookupParameter("Comments").AsString(), "north")

    def test_delete_takes_dependents_and_invalidates(self):
        w = Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), self.level.Id, False)
        s = self.door_symbol()
        s.Activate()
        d = self.doc.Create.NewFamilyInstance(XYZ(5, 0, 0), s, w, self.level, StructuralType.NonStructural)
        gone = sorted(i.Value for i in self.doc.Delete(w.Id))
        self.assertEqual(gone, sorted([w.Id.Value, d.Id.Value]))
        with self.assertRaises(InvalidObjectException):
            d.Name

    def test_element_ids_by_version(self):
        self.assertFalse(hasattr(self.level.Id, "IntegerValue"), "Revit 2026 has no IntegerValue")
        old = Session(version=2023)
        lvl = FilteredElementCollector(old.doc).OfClass(Level).FirstElement()
        self.assertEqual(lvl.Id.IntegerValue, 311)
        self.assertFalse(hasattr(lvl.Id, "Value"), "Revit 2023 has no Value")
        mid = Session(version=2025)
        lvl = FilteredElementCollector(mid.doc).OfClass(Level).FirstElement()
        self.assertEqual((lvl.Id.Value, lvl.Id.IntegerValue), (311, 311))
        with self.assertRaises(InvalidOperationException):
            ElementId(2 ** 40).IntegerValue
        Session()

    def test_collector_needs_a_filter(self):
        with self.assertRaises(InvalidOperationException):
            FilteredElementCollector(self.doc).ToElements()
        walls = FilteredElementCollector(self.doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType()
        self.assertEqual(walls.GetElementCount(), 0)
        types = FilteredElementCollector(self.doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsElementType()
        self.assertEqual(types.GetElementCount(), 4)  # three basic wall types and Curtain Wall 1

    def test_export_image_writes_a_png(self):
        Wall.Create(self.doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(10, 0, 0)), self.level.Id, False)
        self.t.Commit()
        view = FilteredElementCollector(self.doc).OfClass(View3D).FirstElement()
        with tempfile.TemporaryDirectory() as d:
            o = ImageExportOptions()
            o.FilePath = os.path.join(d, "shot")
            o.ExportRange = ExportRange.SetOfViews
            o.SetViewsAndSheets([view.Id])
            o.PixelSize = 320
            self.doc.ExportImage(o)
            files = os.listdir(d)
            self.assertEqual(len(files), 1)
            with open(os.path.join(d, files[0]), "rb") as f:
                data = f.read()
            self.assertTrue(data.startswith(b"\x89PNG"))
            self.assertEqual(int.from_bytes(data[16:20], "big"), 320)


if __name__ == "__main__":
    unittest.main()
