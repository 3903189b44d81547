"""Rooms (Autodesk.Revit.DB.Architecture.Room): Document.Create.NewRoom(Level,
UV) places a room at a point of a level
(https://www.revitapidocs.com/2019/28262c8c-d18a-338c-eb17-f406438949d8.htm; a level not of the document throws ArgumentException).
The room fills the region its bounding walls enclose around that point; a
room in no enclosed region is placed but "not enclosed", with no boundary
and an area of 0. Area is measured at the walls' finish faces, Revit's
default room computation; GetBoundarySegments answers the loops at the
location SpatialElementBoundaryOptions asks for (finish or wall centre), one
segment per bounding wall. The double finds regions bounded by walls that
run along X or Y (the nearest wall on each side of the point that spans
it)."""

from . import errors
from .elements import BuiltInCategory, Element, Level, LocationPoint
from .errors import ArgumentException
from .geometry import Line, XYZ
from .ids import ElementId, NetList
from .parameters import BuiltInParameter, Spec, StorageType, common_specs
from .netenum import NetEnum


class UV:
    """A 2D point on a plane (UV(), UV(u, v))."""

    def __init__(self, *uv):
        if len(uv) not in (0, 2):
            raise TypeError("No constructor of UV takes %d arguments: UV() or UV(u, v)" % len(uv))
        u, v = uv or (0.0, 0.0)
        for c in (u, v):
            if isinstance(c, bool) or not isinstance(c, (int, float)):
                raise ArgumentException("UV coordinates must be numbers, got %r" % (c,))
        self._u, self._v = float(u), float(v)

    U = property(lambda self: self._u)
    V = property(lambda self: self._v)


class SpatialElementBoundaryLocation(NetEnum):
    Finish = 0
    Center = 1
    CoreBoundary = 2
    CoreCenter = 3


class SpatialElementBoundaryOptions:
    def __init__(self):
        self._location = SpatialElementBoundaryLocation.Finish

    @property
    def SpatialElementBoundaryLocation(self):
        return self._location

    @SpatialElementBoundaryLocation.setter
    def SpatialElementBoundaryLocation(self, value):
        self._location = SpatialElementBoundaryLocation(value)


class BoundarySegment:
    def __init__(self, curve, element_id):
        self._curve, self._id = curve, element_id

    def GetCurve(self):
        return self._curve

    ElementId = property(lambda self: self._id)


def _bounds(doc, level_id, x, y):
    """The four nearest walls around (x, y) on the level, west, south, east,
    north: (wall, line coordinate, half width) each, or None when one side
    is open. From the document's wall index (wallindex.py), so a room's
    bounds cost by the walls near it, never by the walls of the project."""
    from .wallindex import ALONG_X, ALONG_Y, WallIndex
    index = WallIndex.of(doc)
    found = (index.nearest(doc, level_id, ALONG_Y, x, y, -1), index.nearest(doc, level_id, ALONG_X, y, x, -1),
             index.nearest(doc, level_id, ALONG_Y, x, y, +1), index.nearest(doc, level_id, ALONG_X, y, x, +1))
    return None if None in found else found


class SpatialElement(Element):
    @property
    def Number(self):
        return self._live()._data["number"]

    @Number.setter
    def Number(self, value):
        errors.require(value, "Number")
        self._set("number", str(value))

    @property
    def Level(self):
        return self._doc.GetElement(self.LevelId)

    def _rectangle(self, at_finish):
        d = self._live()._data
        found = _bounds(self._doc, d["level"], d["point"].X, d["point"].Y)
        if found is None:
            return None
        (w, x0, hw), (s, y0, hs), (e, x1, he), (n, y1, hn) = found
        if at_finish:
            x0, y0, x1, y1 = x0 + hw, y0 + hs, x1 - he, y1 - hn
        return (x0, y0, x1, y1), (w, s, e, n)

    @property
    def Area(self):
        # SpatialElement.Area, square feet
        # (https://www.revitapidocs.com/2025/6628cb12-ce88-a736-8fda-8e71f2d6361f.htm).
        r = self._rectangle(True)
        if r is None:
            return 0.0
        x0, y0, x1, y1 = r[0]
        return (x1 - x0) * (y1 - y0)

    @property
    def Perimeter(self):
        r = self._rectangle(True)
        if r is None:
            return 0.0
        x0, y0, x1, y1 = r[0]
        return 2 * ((x1 - x0) + (y1 - y0))

    def GetBoundarySegments(self, options):
        errors.require(options, "options")
        r = self._rectangle(options.SpatialElementBoundaryLocation == SpatialElementBoundaryLocation.Finish)
        if r is None:
            return NetList()
        (x0, y0, x1, y1), (w, s, e, n) = r
        z = self.Level.Elevation
        corners = [XYZ(x0, y0, z), XYZ(x1, y0, z), XYZ(x1, y1, z), XYZ(x0, y1, z)]
        walls = [s, e, n, w]
        return NetList([NetList(BoundarySegment(Line.CreateBound(corners[i], corners[(i + 1) % 4]), walls[i].Id)
                                for i in range(4))])

    @property
    def Location(self):
        self._live()
        return LocationPoint(self)

    def _specs(self):
        return common_specs() + [
            Spec(BuiltInParameter.ROOM_NAME, "Name", StorageType.String, "name"),
            Spec(BuiltInParameter.ROOM_NUMBER, "Number", StorageType.String, "number"),
            Spec(BuiltInParameter.ROOM_AREA, "Area", StorageType.Double, compute=lambda e: e.Area),
            Spec(BuiltInParameter.ROOM_LEVEL_ID, "Level", StorageType.ElementId, compute=lambda e: e._data["level"]),
        ]


class Room(SpatialElement):
    _CATEGORY = BuiltInCategory.OST_Rooms

    def IsPointInRoom(self, point):
        errors.require(point, "point")
        r = self._rectangle(True)
        if r is None:
            return False
        x0, y0, x1, y1 = r[0]
        return x0 <= point.X <= x1 and y0 <= point.Y <= y1


def new_room(doc, level, point):
    errors.require(level, "level")
    errors.require(point, "point")
    if not isinstance(level, Level) or doc._elements.get(level._id) is not level:
        raise ArgumentException("level is not a level of this document.")
    if not isinstance(point, UV):
        raise ArgumentException("point must be a UV.")
    doc._guard()
    numbers = [int(e._data["number"]) for e in doc._elements.values()
               if isinstance(e, Room) and str(e._data.get("number", "")).isdigit()]
    return doc._add(Room(doc, {"name": "Room", "number": str(max(numbers, default=0) + 1), "level": level._id,
                               "point": XYZ(point.U, point.V, level.Elevation), "comments": "", "mark": ""}))
