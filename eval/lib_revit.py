# Helpers the Revit task setups and checkers share, as lib.py is for
# FreeCAD: the runner puts this file in front of every setup.py and check.py
# of a task whose host is revit. Lengths given and reported are millimetres;
# the API speaks feet, so everything converts here.
import clr
clr.AddReference("RevitAPI")
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType


def ft(mm):
    return UnitUtils.ConvertToInternalUnits(mm, UnitTypeId.Millimeters)


def mm(feet):
    return UnitUtils.ConvertFromInternalUnits(feet, UnitTypeId.Millimeters)


def levels():
    return sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)


def level_named(name):
    found = [l for l in levels() if l.Name == name]
    expect(len(found) == 1, "want one level named %r, found %d (levels: %s)" % (name, len(found), [l.Name for l in levels()]))
    return found[0]


def instances(bic):
    return list(FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType())


def walls():
    return instances(BuiltInCategory.OST_Walls)


def doors():
    return instances(BuiltInCategory.OST_Doors)


# --- setup ---------------------------------------------------------------

def make_wall(start, end, level, height=3000, type_name="Generic - 200mm"):
    """A wall of type_name on level from start to end, (x, y) in mm."""
    wt = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == type_name][0]
    line = Line.CreateBound(XYZ(ft(start[0]), ft(start[1]), 0), XYZ(ft(end[0]), ft(end[1]), 0))
    return Wall.Create(doc, line, wt.Id, level.Id, ft(height), 0.0, False, False)


def door_type(name="0915 x 2134mm"):
    found = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors) if s.Name == name]
    expect(len(found) == 1, "no door type %r" % name)
    if not found[0].IsActive:
        found[0].Activate()
    return found[0]


def make_door(wall, x_mm, level, mark=""):
    """A door in wall at x_mm along X (the wall runs along X at its y)."""
    y = wall.Location.Curve.GetEndPoint(0).Y
    d = doc.Create.NewFamilyInstance(XYZ(ft(x_mm), y, 0), door_type(), wall, level, StructuralType.NonStructural)
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set(mark)
    return d


# --- checks --------------------------------------------------------------

class CheckFailed(Exception):
    """What a correct result must hold and this one does not."""


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def expect_census(want):
    """The exact count of building elements: {"walls": n, "doors": n,
    "levels": n}; nothing else was added or deleted."""
    got = {"walls": len(walls()), "doors": len(doors()), "levels": len(levels())}
    for k, n in want.items():
        expect(got[k] == n, "want %d %s, found %d (census %s)" % (n, k, got[k], got))


def ends_mm(wall):
    c = wall.Location.Curve
    return [(round(mm(p.X)), round(mm(p.Y))) for p in (c.GetEndPoint(0), c.GetEndPoint(1))]


def mark(el):
    return el.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).AsString() or ""
