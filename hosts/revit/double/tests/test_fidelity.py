"""The double's public surface against the Revit API's member list
(fidelity.py says what is checked and where the list comes from)."""
import sys
import unittest

import fidelity
from Autodesk.Revit.DB import FilteredElementCollector, Element, Level, Line, Plane, Transaction, XYZ
from revitdouble import Session


def sample_instances():
    """Objects a script meets: the session's, every element of the seeded
    project with its location, category and parameters, a change's event
    arguments, geometry."""
    s = Session()
    doc = s.doc
    out = [s.app, s.uiapp, s.uidoc, s.uidoc.Selection, doc, doc.Create, XYZ(1, 2, 3),
           Line.CreateBound(XYZ(0, 0, 0), XYZ(1, 0, 0)), Transaction(doc, "t"),
           Plane.CreateByNormalAndOrigin(XYZ.BasisZ, XYZ.Zero)]
    seen = []
    s.app.DocumentChanged += lambda sender, args: seen.append(args)
    for el in FilteredElementCollector(doc).WhereElementIsNotElementType().ToElements():
        out.append(el)
        for attr in ("Location", "Category"):
            v = getattr(el, attr, None)
            if v is not None:
                out.append(v)
        out.extend(el.Parameters)
    out.extend(FilteredElementCollector(doc).WhereElementIsElementType().ToElements())
    t = Transaction(doc, "sample")
    t.Start()
    Level.Create(doc, 40.0)
    out.extend(_sample_areas(doc))
    t.Commit()
    if not seen:
        raise AssertionError("a commit raised no DocumentChanged to sample")
    out.extend(seen)
    return out


def _sample_areas(doc):
    """One of each object the areas beyond walls and doors hand a script:
    a curtain wall's grid, line and mullion, a room and its boundary, a
    schedule's definition and fields, a sheet and viewport, a tag, filters
    and references."""
    from Autodesk.Revit.DB import (BuiltInCategory, ElementCategoryFilter, ElementId, FamilySymbol, HostObjectUtils,
                                   IndependentTag, LogicalOrFilter, MullionType, Reference, ShellLayerType,
                                   SpatialElementBoundaryOptions, TagMode, TagOrientation, UV, ViewPlan, ViewSchedule,
                                   ViewSheet, Viewport, Wall, WallType)
    from Autodesk.Revit.DB.Structure import StructuralType
    level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
    wt = {t.Name: t for t in FilteredElementCollector(doc).OfClass(WallType)}
    out = []
    pts = [XYZ(0, 0, 0), XYZ(20, 0, 0), XYZ(20, 10, 0), XYZ(0, 10, 0)]
    walls = [Wall.Create(doc, Line.CreateBound(pts[i], pts[(i + 1) % 4]), wt["Generic - 200mm"].Id, level.Id, 10.0, 0.0,
                         False, False) for i in range(4)]
    cw = Wall.Create(doc, Line.CreateBound(XYZ(0, 30, 0), XYZ(20, 30, 0)), wt["Curtain Wall 1"].Id, level.Id, 10.0, 0.0,
                     False, False)
    grid = cw.CurtainGrid
    line = grid.AddGridLine(False, XYZ(5, 30, 0), False)
    out += [cw, grid, line] + list(line.AddMullions(line.FullCurve, FilteredElementCollector(doc).OfClass(MullionType).FirstElement(), False))
    room = doc.Create.NewRoom(level, UV(10, 5))
    out += [room, room.Location, SpatialElementBoundaryOptions()] + list(room.GetBoundarySegments(SpatialElementBoundaryOptions())[0])
    schedule = ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Doors))
    fields = list(schedule.Definition.GetSchedulableFields())
    out += [schedule, schedule.Definition, schedule.Definition.AddField(fields[0])] + fields
    sheet = ViewSheet.Create(doc, FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_TitleBlocks).FirstElement().Id)
    plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel.Id == level.Id][0]
    out += [sheet, Viewport.Create(doc, sheet.Id, plan.Id, XYZ(1, 1, 0))]
    door_type = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()
    door_type.Activate()
    door = doc.Create.NewFamilyInstance(XYZ(5, 0, 0), door_type, walls[0], level, StructuralType.NonStructural)
    out += [door, IndependentTag.Create(doc, plan.Id, Reference(door), False, TagMode.TM_ADDBY_CATEGORY,
                                        TagOrientation.Horizontal, XYZ(5, 1, 0))]
    out += [LogicalOrFilter(ElementCategoryFilter(BuiltInCategory.OST_Walls), ElementCategoryFilter(BuiltInCategory.OST_Doors))]
    from Autodesk.Revit.DB import Transform
    out += [walls[0].get_BoundingBox(None), Transform.CreateTranslation(XYZ(1, 0, 0)), walls[0].Location, door.Location]
    out += list(HostObjectUtils.GetSideFaces(walls[1], ShellLayerType.Exterior)) + list(doc.Phases) + [doc.Phases]
    return out


class FidelityTest(unittest.TestCase):
    def test_source_named(self):
        src = fidelity.load("revit2017.json")["source"]
        for key in ("repository", "commit", "revit", "assemblies"):
            self.assertTrue(src.get(key), "the table names its %s" % key)
        self.assertEqual(len(src["commit"]), 40)

    def test_the_double_is_revits_api(self):
        api = fidelity.api()
        problems = fidelity.check(api, sample_instances())
        classes, members = fidelity.surface(api)
        print("fidelity: %d classes and %d members of the double held to %d classes of Revit %s (%s@%s)"
              % (classes, members, len(api.classes), api.source["revit"], api.source["repository"],
                 api.source["commit"][:12]), file=sys.stderr)
        self.assertEqual(problems, [], "the double differs from Revit's API:\n" + "\n".join(problems))

    def test_table_covers_the_namespaces(self):
        api = fidelity.api()
        for ns in fidelity.NAMESPACES:
            self.assertIn(ns, api.namespaces, "the table has no class of %s" % ns)


class PlantedFaultsTest(unittest.TestCase):
    """Each kind of difference fails the check: fixtures planted on a copy
    of the double's classes, taken away again after."""

    def planted(self, cls, name, value):
        old = cls.__dict__.get(name, fidelity)
        setattr(cls, name, value)
        self.addCleanup(lambda: delattr(cls, name) if old is fidelity else setattr(cls, name, old))
        return fidelity.check(fidelity.api())

    def test_a_member_revit_lacks(self):
        problems = self.planted(Element, "LookupParameterByGuess", lambda self, name: None)
        self.assertIn("Autodesk.Revit.DB.Element.LookupParameterByGuess: not in Revit 2017's API (nor in later.json)",
                      problems)

    def test_a_wrong_static_ness(self):
        # Revit's Line.CreateBound is static.
        problems = self.planted(Line, "CreateBound", lambda self, a, b: None)
        self.assertIn("Autodesk.Revit.DB.Line.CreateBound: an instance method where Revit's is a static method", problems)

    def test_a_wrong_arity(self):
        # Revit's XYZ.DistanceTo takes one point.
        problems = self.planted(XYZ, "DistanceTo", lambda self: 0.0)
        self.assertIn("Autodesk.Revit.DB.XYZ.DistanceTo: takes 0 argument; Revit's overloads take [1]", problems)

    def test_settable_where_read_only(self):
        problems = self.planted(XYZ, "X", property(lambda self: 0.0, lambda self, v: None))
        self.assertIn("Autodesk.Revit.DB.XYZ.X: a settable property where Revit has a read-only property", problems)

    def test_an_instance_attribute_where_read_only(self):
        api = fidelity.api()
        t = Transaction.__new__(Transaction)
        t.__dict__["IsValidObject"] = True
        self.assertIn("Autodesk.Revit.DB.Transaction.IsValidObject: settable (an instance attribute) where Revit's "
                      "is read-only", fidelity.check(api, [t]))

    def test_a_class_in_the_wrong_namespace(self):
        import Autodesk.Revit.DB as DB
        from Autodesk.Revit.DB.Events import DocumentChangedEventArgs
        DB.DocumentChangedEventArgs = DocumentChangedEventArgs
        self.addCleanup(lambda: delattr(DB, "DocumentChangedEventArgs"))
        problems = fidelity.check(fidelity.api())
        self.assertTrue(any(p.startswith("Autodesk.Revit.DB.DocumentChangedEventArgs: not in Revit 2017's API "
                                         "(Revit has Autodesk.Revit.DB.Events.DocumentChangedEventArgs)") for p in problems),
                        problems)

    def test_a_later_member_needs_its_release_and_page(self):
        table = fidelity.load("revit2017.json")
        with self.assertRaisesRegex(ValueError, "needs the release that added it and its reference page"):
            fidelity.Api(table, {"Autodesk.Revit.DB.Wall": {"members": {"Sweep": "m1"}}})



class ReadmeTest(unittest.TestCase):
    def test_readme_lists_the_members_the_double_models(self):
        import os
        readme = os.path.join(fidelity.HERE, "..", "..", "README.md")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        begin, end = fidelity.README_BEGIN, fidelity.README_END
        self.assertIn(begin, text)
        listed = text.split(begin, 1)[1].split(end, 1)[0]
        self.assertEqual(listed, fidelity.members_markdown(),
                         "hosts/revit/README.md's member list is not the double's: write it again with "
                         "PYTHONPATH=hosts/revit/double python3 hosts/revit/double/tests/fidelity.py")


if __name__ == "__main__":
    unittest.main()
