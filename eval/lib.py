# Helpers the task setups and checkers share. The runner puts this file in
# front of every setup.py and check.py (never in front of a reference or a
# wrong solution: those are what a person or a model would write alone).
# Lengths are millimetres; z is up; a level is an Arch "Building Storey".
import FreeCAD as App
import Arch
import Draft

# The building kinds a census counts, by IfcType.
KINDS = ("Building Storey", "Wall", "Door", "Window", "Slab", "Column", "Beam", "Stair")


# --- setup ---------------------------------------------------------------

def make_level(label, z=0):
    lv = Arch.makeFloor()
    lv.Label = label
    p = lv.Placement
    p.Base.z = z
    lv.Placement = p
    return lv


def make_wall(label, start, end, width=200, height=3000, level=None):
    """A wall centred on the line from start to end, (x, y, z) in mm."""
    line = Draft.makeLine(App.Vector(*start), App.Vector(*end))
    line.Label = label + " axis"
    w = Arch.makeWall(line, width=width, height=height, align="Center")
    w.Label = label
    if level is not None:
        level.addObject(w)
    return w


def make_room(level, x0, y0, x1, y1, z=0, width=200, height=2700, names=("South wall", "East wall", "North wall", "West wall")):
    corners = [(x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)]
    return [make_wall(names[i], corners[i], corners[(i + 1) % 4], width, height, level) for i in range(4)]


def make_opening(label, wall, offset, width, height, sill=0, door=False, level=None, hosted=True):
    """A door or window in a wall along X or Y, offset mm from the wall's
    start to the opening's near edge, at sill mm above the wall's base;
    hosted=False leaves it sitting in the wall without cutting it."""
    doc.recompute()  # a new line has its ends only once computed
    a, b = wall.Base.Start, wall.Base.End
    d = (b - a).normalize()
    base = a + d * offset
    base.z = a.z + sill
    base = base - App.Vector(-d.y, d.x, 0) * (wall.Width.Value / 2)
    rot = App.Rotation(App.Vector(0, 0, 1), 90 if abs(d.y) > abs(d.x) else 0).multiply(App.Rotation(App.Vector(1, 0, 0), 90))
    preset = "Simple door" if door else "Fixed"
    o = Arch.makeWindowPreset(preset, width=width, height=height, h1=50, h2=50, h3=50, w1=wall.Width.Value, w2=50, o1=0, o2=50,
                              placement=App.Placement(base, rot))
    o.Label = label
    if hosted:
        o.Hosts = [wall]
    if level is not None:
        level.addObject(o)
    return o


# --- checks --------------------------------------------------------------

class CheckFailed(Exception):
    """What a correct result must hold and this one does not."""


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def kind(o):
    return getattr(o, "IfcType", "")


def of_kind(k):
    return [o for o in doc.Objects if kind(o) == k]


def one(label, k=None):
    found = [o for o in doc.Objects if o.Label == label and (k is None or kind(o) == k)]
    expect(len(found) == 1, "want exactly one %s labelled %r, found %d" % (k or "object", label, len(found)))
    return found[0]


def census():
    c = {}
    for o in doc.Objects:
        if kind(o) in KINDS:
            c[kind(o)] = c.get(kind(o), 0) + 1
    return c


def expect_census(want):
    """Exactly these building elements, nothing more (nothing else added or deleted)."""
    have = census()
    diff = ["%s: %d, want %d" % (k, have.get(k, 0), want.get(k, 0)) for k in KINDS if have.get(k, 0) != want.get(k, 0)]
    expect(not diff, "the document's building elements are not what they should be: " + "; ".join(diff))


def near(a, b, tol=1.0):
    return abs(float(a) - float(b)) <= tol


def mm(q):
    return float(getattr(q, "Value", q))


def expect_near(actual, want, what, tol=1.0):
    expect(near(actual, want, tol), "%s is %.1f, want %.1f (within %.1f)" % (what, float(actual), float(want), tol))


def level_of(o):
    """The level whose group holds o, or None."""
    for p in o.InList:
        if kind(p) == "Building Storey" and o in p.Group:
            return p
    return None


def members(lv, k):
    return [o for o in lv.Group if kind(o) == k]


def box(o):
    return o.Shape.BoundBox


def expect_box(o, xmin, ymin, zmin, xmax, ymax, zmax, tol=1.0):
    b = box(o)
    got = (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)
    want = (xmin, ymin, zmin, xmax, ymax, zmax)
    expect(all(near(g, w, tol) for g, w in zip(got, want)),
           "%s spans (%s), want (%s)" % (o.Label, ", ".join("%.0f" % g for g in got), ", ".join("%.0f" % w for w in want)))


def axis(w):
    """A wall's axis as ((x, y, z), (x, y, z)), from its base line or its box."""
    if w.Base is not None and hasattr(w.Base, "Start"):
        a, b = w.Base.Start, w.Base.End
        return (a.x, a.y, a.z), (b.x, b.y, b.z)
    e = w.Shape.BoundBox
    if e.XLength >= e.YLength:
        return (e.XMin, e.Center.y, e.ZMin), (e.XMax, e.Center.y, e.ZMin)
    return (e.Center.x, e.YMin, e.ZMin), (e.Center.x, e.YMax, e.ZMin)


def same_axis(w, start, end, tol=2.0):
    a, b = axis(w)
    fwd = all(near(x, y, tol) for x, y in zip(a + b, tuple(start) + tuple(end)))
    back = all(near(x, y, tol) for x, y in zip(b + a, tuple(start) + tuple(end)))
    return fwd or back


def hosts(o):
    return list(getattr(o, "Hosts", []) or [])


def sill(o):
    lv = level_of(o)
    return box(o).ZMin - (lv.Placement.Base.z if lv else 0)


def numbers(text):
    """The numbers in a text, as floats (1,234.5 and 1234.5 alike)."""
    import re
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


def expect_centred(w, tol=2.0):
    """A wall along X or Y whose body straddles its axis evenly."""
    (ax, ay, _), (bx, by, _) = axis(w)
    b, half = box(w), mm(w.Width) / 2
    if abs(bx - ax) >= abs(by - ay):
        ok = near(b.YMin, ay - half, tol) and near(b.YMax, ay + half, tol)
    else:
        ok = near(b.XMin, ax - half, tol) and near(b.XMax, ax + half, tol)
    expect(ok, "%s is not centred on its axis: its body spans x %.0f..%.0f, y %.0f..%.0f" % (w.Label, b.XMin, b.XMax, b.YMin, b.YMax))
