"""Curtain walls: a wall whose type is of kind Curtain has a CurtainGrid
(Wall.CurtainGrid is null for any other wall). CurtainGrid.AddGridLine adds
a U (horizontal, at a height) or V (vertical, at a distance along the wall)
grid line through a position, and a position off the wall throws
InvalidOperationException
(https://www.revitapidocs.com/2017/8886680c-2075-f542-9fcd-140b8bd87d12.htm).
The lines divide the wall into panels, (U lines + 1) x (V lines + 1) of
them (NumPanels); CurtainGridLine.AddMullions puts mullions of a
MullionType on a line's segments. Panels are regenerated as lines change,
so a panel's id does not outlive a change to its grid; mullions on a line
are deleted with it, and the grid's lines, mullions and panels with the
wall."""
from . import errors
from .elements import BuiltInCategory, Element, FamilySymbol
from .errors import ArgumentException, InvalidOperationException
from .geometry import Line, XYZ
from .ids import ElementId, NetList

# A grid line within this distance (feet) of an edge or another line is refused.
_MIN_GAP = 1.0 / 12.0


class MullionType(FamilySymbol):
    _CATEGORY = BuiltInCategory.OST_CurtainWallMullions


class PanelType(FamilySymbol):
    _CATEGORY = BuiltInCategory.OST_CurtainWallPanels


def _curtain_data(wall):
    d = wall._live()._data
    d.setdefault("grid_u", [])
    d.setdefault("grid_v", [])
    d.setdefault("panels", [])
    return d


def _extent(wall):
    """(origin, direction, length, base z, height) of the wall's face."""
    d = wall._data
    c = d["curve"]
    base = wall._doc.GetElement(ElementId(d["level"])).Elevation + d["offset"]
    return c.GetEndPoint(0), c.Direction, c.Length, base, d["height"]


class CurtainGrid:
    """The grid of one curtain wall (an API object, not an element)."""

    def __init__(self, wall):
        self._wall = wall

    def _lines(self, key):
        d = _curtain_data(self._wall)
        return [self._wall._doc._elements[i] for i in d[key] if i in self._wall._doc._elements]

    def AddGridLine(self, is_u, position, one_segment_only):
        errors.require(position, "position")
        wall = self._wall._live()
        o, direction, length, base, height = _extent(wall)
        if is_u:
            at = position.Z - base
            span = height
        else:
            at = position.Subtract(o).DotProduct(direction)
            span = length
        if not (_MIN_GAP <= at <= span - _MIN_GAP):
            raise InvalidOperationException("The position for the grid line is out of range.")
        key = "grid_u" if is_u else "grid_v"
        if any(abs(g._data["at"] - at) < _MIN_GAP for g in self._lines(key)):
            raise InvalidOperationException("The position for the grid line is out of range: a grid line is already there.")
        wall._doc._guard()
        line = wall._doc._add(CurtainGridLine(wall._doc, {"wall": wall._id, "u": bool(is_u), "at": at,
                                                         "category": int(BuiltInCategory.OST_CurtainGridsWall),
                                                         "level": wall._data["level"]}))
        d = _curtain_data(wall)
        d[key] = d[key] + [line._id]
        _regenerate_panels(wall)
        return line

    def GetUGridLineIds(self):
        return NetList(g.Id for g in sorted(self._lines("grid_u"), key=lambda g: g._data["at"]))

    def GetVGridLineIds(self):
        return NetList(g.Id for g in sorted(self._lines("grid_v"), key=lambda g: g._data["at"]))

    def GetMullionIds(self):
        return NetList(ElementId(i) for i, e in sorted(self._wall._doc._elements.items())
                       if isinstance(e, Mullion) and e._data["wall"] == self._wall._id)

    def GetPanelIds(self):
        return NetList(ElementId(i) for i in _curtain_data(self._wall)["panels"])

    NumULines = property(lambda self: len(self._lines("grid_u")))
    NumVLines = property(lambda self: len(self._lines("grid_v")))
    NumPanels = property(lambda self: (self.NumULines + 1) * (self.NumVLines + 1))


class CurtainGridLine(Element):
    _CATEGORY = BuiltInCategory.OST_CurtainGridsWall

    IsUGridLine = property(lambda self: self._live()._data["u"])

    @property
    def FullCurve(self):
        wall = self._doc.GetElement(ElementId(self._live()._data["wall"]))
        o, direction, length, base, height = _extent(wall)
        at = self._data["at"]
        if self._data["u"]:
            start = XYZ(o.X, o.Y, base + at)
            return Line(start, start.Add(direction.Multiply(length)))
        p = o.Add(direction.Multiply(at))
        return Line(XYZ(p.X, p.Y, base), XYZ(p.X, p.Y, base + height))

    AllSegmentCurves = property(lambda self: NetList([self.FullCurve]))

    def AddMullions(self, segment, mullion_type, one_segment_only):
        """Mullions of mullion_type along the line (the double keeps one per
        line, the whole line's length); answers the new mullions."""
        errors.require(segment, "gridLineSegment")
        errors.require(mullion_type, "mullionType")
        if not isinstance(mullion_type, MullionType):
            raise ArgumentException("mullionType is not a mullion type.")
        self._live()
        self._doc._guard()
        if any(isinstance(e, Mullion) and e._data["line"] == self._id for e in self._doc._elements.values()):
            return NetList()
        m = self._doc._add(Mullion(self._doc, {"wall": self._data["wall"], "line": self._id, "type": mullion_type._id,
                                               "name": mullion_type.Name, "level": self._data["level"]}))
        return NetList([m])

    def _dependents(self):
        return [i for i, e in self._doc._elements.items() if isinstance(e, Mullion) and e._data["line"] == self._id]

    def _before_delete(self):
        wall = self._doc._elements.get(self._data["wall"])
        if wall is not None:
            d = _curtain_data(wall)
            key = "grid_u" if self._data["u"] else "grid_v"
            d[key] = [i for i in d[key] if i != self._id]
            # The wall deletes its panels before its lines: with the panels
            # gone the wall itself is going, and nothing is regenerated.
            if all(i in self._doc._elements for i in d["panels"]):
                _regenerate_panels(wall)


class Mullion(Element):
    _CATEGORY = BuiltInCategory.OST_CurtainWallMullions

    @property
    def LocationCurve(self):
        return self._doc.GetElement(ElementId(self._live()._data["line"])).FullCurve

    MullionType = property(lambda self: self._doc.GetElement(self.GetTypeId()))
    Host = property(lambda self: self._doc.GetElement(ElementId(self._live()._data["wall"])))


class Panel(Element):
    _CATEGORY = BuiltInCategory.OST_CurtainWallPanels

    Host = property(lambda self: self._doc.GetElement(ElementId(self._live()._data["wall"])))


def _regenerate_panels(wall):
    doc = wall._doc
    d = _curtain_data(wall)
    for i in d["panels"]:
        doc._elements.pop(i, None)
    panel_type = next((e for _, e in sorted(doc._elements.items()) if isinstance(e, PanelType)), None)
    nu, nv = len(d["grid_u"]), len(d["grid_v"])
    made = []
    for _ in range((nu + 1) * (nv + 1)):
        p = doc._add(Panel(doc, {"wall": wall._id, "type": panel_type._id if panel_type else -1,
                                 "name": panel_type.Name if panel_type else "", "level": wall._data["level"]}))
        made.append(p._id)
    d["panels"] = made


def curtain_grid(wall):
    """Wall.CurtainGrid: the grid of a curtain wall, None for any other."""
    from .elements import WallKind
    t = wall.WallType
    if t is None or t.Kind != WallKind.Curtain:
        return None
    return CurtainGrid(wall)


def curtain_dependents(wall):
    d = wall._data
    lines = list(d.get("grid_u", [])) + list(d.get("grid_v", []))
    return list(d.get("panels", [])) + lines


def new_curtain_wall(wall):
    """A new curtain wall starts as one panel."""
    from .elements import WallKind
    if wall.WallType.Kind == WallKind.Curtain:
        _regenerate_panels(wall)
    return wall
