"""Runs the Nexus Revit epilogue against the Revit API double
(hosts/revit/double, on PYTHONPATH), as the add-in does: the scenario is
drawn through the API in one transaction, and nexus_changes() holds the ids
DocumentChanged reported for it, as decimal strings.

Usage: python3 revit_harness.py SCENARIO EPILOGUE_FILE
SCENARIO "few" draws walls on two levels, a door, a window and a floor, with
model lines, a reference plane and a sketch plane, moves Level 2 and deletes
two walls; "many" draws 30 walls with 10 doors in them and deletes two.
"""
import sys

from Autodesk.Revit.DB import (BuiltInCategory, CurveLoop, FamilySymbol, FilteredElementCollector, Floor, FloorType,
                               Level, Line, Plane, SketchPlane, Transaction, Wall, XYZ)
from Autodesk.Revit.DB.Structure import StructuralType
from revitdouble import Session


def level(doc, name):
    return next(l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == name)


def symbol(doc, category):
    s = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(category).FirstElement()
    if not s.IsActive:
        s.Activate()
    return s


def wall(doc, lvl, x0, y0, x1, y1):
    return Wall.Create(doc, Line.CreateBound(XYZ(x0, y0, 0), XYZ(x1, y1, 0)), lvl.Id, False)


def few(doc, doomed):
    l1, l2 = level(doc, "Level 1"), level(doc, "Level 2")
    w1 = wall(doc, l1, 0, 0, 20, 0)
    w2 = wall(doc, l2, 0, 0, 0, 15)
    doc.Create.NewFamilyInstance(XYZ(10, 0, 0), symbol(doc, BuiltInCategory.OST_Doors), w1, l1,
                                 StructuralType.NonStructural)
    doc.Create.NewFamilyInstance(XYZ(0, 7, 0), symbol(doc, BuiltInCategory.OST_Windows), w2, l2,
                                 StructuralType.NonStructural)
    pts = [XYZ(0, 0, 0), XYZ(20, 0, 0), XYZ(20, 15, 0), XYZ(0, 15, 0)]
    loop = CurveLoop.Create([Line.CreateBound(pts[i], pts[(i + 1) % 4]) for i in range(4)])
    Floor.Create(doc, [loop], FilteredElementCollector(doc).OfClass(FloorType).FirstElement().Id, l1.Id)
    plane = SketchPlane.Create(doc, Plane.CreateByNormalAndOrigin(XYZ.BasisZ, XYZ.Zero))
    for i in range(3):
        doc.Create.NewModelCurve(Line.CreateBound(XYZ(0, i, 0), XYZ(5, i, 0)), plane)
    doc.Create.NewReferencePlane(XYZ(0, -5, 0), XYZ(20, -5, 0), XYZ.BasisZ, doc.ActiveView)
    l2.Elevation = l2.Elevation + 1.0
    for w in doomed:
        doc.Delete(w.Id)


def many(doc, doomed):
    l1 = level(doc, "Level 1")
    door = symbol(doc, BuiltInCategory.OST_Doors)
    for i in range(30):
        w = wall(doc, l1, 0, 10 * i, 20, 10 * i)
        if i < 10:
            doc.Create.NewFamilyInstance(XYZ(10, 10 * i, 0), door, w, l1, StructuralType.NonStructural)
    for w in doomed:
        doc.Delete(w.Id)


def main():
    scenario, path = sys.argv[1], sys.argv[2]
    session = Session()
    doc = session.doc
    setup = Transaction(doc, "setup")
    setup.Start()
    doomed = [wall(doc, level(doc, "Level 1"), -50, y, -40, y) for y in (0, 5)]
    setup.Commit()
    seen = {}

    def changed(sender, args):
        for key, ids in (("added", args.GetAddedElementIds()), ("modified", args.GetModifiedElementIds()),
                         ("deleted", args.GetDeletedElementIds())):
            seen[key] = [str(i.Value) for i in ids]
    doc.Application.DocumentChanged += changed
    t = Transaction(doc, scenario)
    t.Start()
    {"few": few, "many": many}[scenario](doc, doomed)
    t.Commit()
    changes = dict(seen, changed=seen["added"] + seen["modified"], warnings=list(doc._last_warnings))
    code = open(path, encoding="utf-8").read()
    ns = {"__name__": "__nexus__", "doc": doc, "nexus_changes": lambda: dict(changes)}
    exec(compile(code, "<nexus-epilogue>", "exec"), ns)


main()
