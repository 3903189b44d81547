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


def numbers(text):
    """The numbers in a text, as floats (1,234.5 and 1234.5 alike)."""
    import re
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


def symbol(bic, name=None):
    """The (activated) type of a loaded family of category bic, by name."""
    found = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(bic) if name is None or s.Name == name]
    expect(len(found) >= 1, "no %s type %r" % (bic, name))
    if not found[0].IsActive:
        found[0].Activate()
    return found[0]


def make_level(name, elevation_mm):
    l = Level.Create(doc, ft(elevation_mm))
    l.Name = name
    return l


def make_face_light(wall, x_mm, z_mm):
    """A face-based wall light on the wall's exterior face at x_mm along X."""
    face = HostObjectUtils.GetSideFaces(wall, ShellLayerType.Exterior)[0]
    y = wall.Location.Curve.GetEndPoint(0).Y
    return doc.Create.NewFamilyInstance(face, XYZ(ft(x_mm), y, ft(z_mm)), XYZ.BasisX,
                                        symbol(BuiltInCategory.OST_LightingFixtures))


def make_desk(x_mm, y_mm, level):
    return doc.Create.NewFamilyInstance(XYZ(ft(x_mm), ft(y_mm), 0), symbol(BuiltInCategory.OST_Furniture), level,
                                        StructuralType.NonStructural)


def article_project():
    """The project the article's three requests are made on: four levels
    (a mezzanine between Level 2 and Level 3), an interior wall with doors
    on each storey, the south facade along y = 0 on Level 1 and Level 2,
    face-based wall lights (two on a partition that was then deleted, so
    they lost their host, one on a wall that stands) and desks, which sit on
    a level and have no host by design."""
    l1, l2 = level_named("Level 1"), level_named("Level 2")
    mezz = make_level("Mezzanine", 6000)
    l3 = make_level("Level 3", 8000)
    out = {"levels": [l1, l2, mezz, l3]}
    out["facade"] = make_wall((0, 0), (18000, 0), l1, 4000, "Exterior - Brick on CMU")
    out["facade2"] = make_wall((0, 0), (18000, 0), l2, 4000, "Exterior - Brick on CMU")
    marks = {"Level 1": ("D-a", "D-b"), "Level 2": ("D-c", "D-d"), "Mezzanine": ("M1",), "Level 3": ("7", "3", "12", "5")}
    xs = {"Level 1": (3000, 9000), "Level 2": (4000, 12000), "Mezzanine": (6000,), "Level 3": (15000, 2000, 8000, 11000)}
    out["doors"] = {}
    for l in out["levels"]:
        w = make_wall((0, 6000), (18000, 6000), l, 2000 if l.Name == "Mezzanine" else 3000)
        out["doors"][l.Name] = [make_door(w, x, l, m) for x, m in zip(xs[l.Name], marks[l.Name])]
    partition = make_wall((0, 3000), (9000, 3000), l1)
    out["orphans"] = [make_face_light(partition, 2000, 1800), make_face_light(partition, 7000, 1800)]
    out["hosted"] = [make_face_light(out["facade2"], 5000, 2200)]
    doc.Delete(partition.Id)
    out["desks"] = [make_desk(4000, 4500, l1), make_desk(10000, 4500, l2)]
    return out


def comments(el):
    return el.get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).AsString() or ""


def make_box(x0, y0, x1, y1, level, height=3000):
    """Four walls whose location lines run round the rectangle (mm)."""
    pts = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    return [make_wall(pts[i], pts[(i + 1) % 4], level, height) for i in range(4)]


def rooms():
    from Autodesk.Revit.DB.Architecture import Room
    return list(FilteredElementCollector(doc).OfClass(Room))


def sqm(area_ft2):
    return UnitUtils.ConvertFromInternalUnits(area_ft2, UnitTypeId.SquareMeters)


def plan_of(level):
    found = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel is not None and v.GenLevel.Id == level.Id]
    expect(len(found) == 1, "want one floor plan of %s, found %d" % (level.Name, len(found)))
    return found[0]
