"""What a building is drawn with: planes, sketch planes, model lines,
reference planes, curve loops, and floors on a loop."""
from . import errors
from .elements import BuiltInCategory, Element, ElementType, Level
from .errors import ArgumentException
from .geometry import XYZ, BoundingBoxXYZ, Line
from .ids import ElementId


class Plane:
    def __init__(self, normal, origin):
        self._normal, self._origin = normal.Normalize(), origin

    Normal = property(lambda self: self._normal)
    Origin = property(lambda self: self._origin)

    @staticmethod
    def CreateByNormalAndOrigin(normal, origin):
        errors.require(normal, "normal")
        errors.require(origin, "origin")
        if normal.GetLength() < 1e-9:
            raise ArgumentException("The normal is a zero-length vector.")
        return Plane(normal, origin)


class CurveLoop:
    def __init__(self):
        self._curves = []

    @staticmethod
    def Create(curves):
        loop = CurveLoop()
        for c in curves:
            loop.Append(c)
        return loop

    def Append(self, curve):
        errors.require(curve, "curve")
        if self._curves and not self._curves[-1].GetEndPoint(1).IsAlmostEqualTo(curve.GetEndPoint(0), 1e-6):
            raise ArgumentException("The curve does not start where the previous curve ends.")
        self._curves.append(curve)

    def IsOpen(self):
        return not self._curves or not self._curves[-1].GetEndPoint(1).IsAlmostEqualTo(
            self._curves[0].GetEndPoint(0), 1e-6)

    def __iter__(self):
        return iter(self._curves)


class SketchPlane(Element):
    """Has no category in Revit; a report names it by its class."""

    @staticmethod
    def Create(document, plane):
        errors.require(plane, "plane")
        document._guard()
        return document._add(SketchPlane(document, {"name": "", "origin": plane.Origin, "normal": plane.Normal}))


class CurveElement(Element):
    @property
    def GeometryCurve(self):
        return self._live()._data["curve"]

    @property
    def SketchPlane(self):
        return self._doc.GetElement(ElementId(self._live()._data["sketch"]))


class ModelLine(CurveElement):
    _CATEGORY = BuiltInCategory.OST_Lines


class ReferencePlane(Element):
    _CATEGORY = BuiltInCategory.OST_CLines

    BubbleEnd = property(lambda self: self._live()._data["bubble"])
    FreeEnd = property(lambda self: self._live()._data["free"])


def new_model_curve(doc, curve, sketch_plane):
    errors.require(curve, "curve")
    errors.require(sketch_plane, "sketchPlane")
    if not isinstance(curve, Line):
        raise ArgumentException("The double models model lines on lines only.")
    n, o = sketch_plane._data["normal"], sketch_plane._data["origin"]
    for i in (0, 1):
        if abs(curve.GetEndPoint(i).Subtract(o).DotProduct(n)) > 1e-6:
            raise ArgumentException("The curve does not lie in the sketch plane.")
    doc._guard()
    return doc._add(ModelLine(doc, {"name": "Model Lines", "curve": curve, "sketch": sketch_plane._id}))


def new_reference_plane(doc, bubble_end, free_end, cut_vec, view):
    errors.require(bubble_end, "bubbleEnd")
    errors.require(free_end, "freeEnd")
    errors.require(cut_vec, "cutVec")
    if bubble_end.IsAlmostEqualTo(free_end):
        raise ArgumentException("bubbleEnd and freeEnd are the same point.")
    doc._guard()
    return doc._add(ReferencePlane(doc, {"name": "Reference Plane", "bubble": bubble_end, "free": free_end,
                                         "cut": cut_vec}))


class FloorType(ElementType):
    _CATEGORY = BuiltInCategory.OST_Floors


class Floor(Element):
    _CATEGORY = BuiltInCategory.OST_Floors

    @staticmethod
    def Create(document, profile, floor_type_id, level_id):
        """Floor.Create(Document, IList<CurveLoop>, ElementId floorTypeId,
        ElementId levelId), the 2022 and later way: the loops must be closed
        and horizontal, the type a floor type, the level a level."""
        errors.require(profile, "profile")
        loops = list(profile)
        if not loops or any(not isinstance(l, CurveLoop) or l.IsOpen() for l in loops):
            raise ArgumentException("The input curve loops are not closed.")
        ft = document.GetElement(errors.require(floor_type_id, "floorTypeId"))
        if not isinstance(ft, FloorType):
            raise ArgumentException("floorTypeId is not the id of a floor type.")
        level = document.GetElement(errors.require(level_id, "levelId"))
        if not isinstance(level, Level):
            raise ArgumentException("levelId is not the id of a level.")
        pts = [c.GetEndPoint(0) for l in loops for c in l]
        if max(p.Z for p in pts) - min(p.Z for p in pts) > 1e-6:
            raise ArgumentException("The curve loops are not horizontal.")
        document._guard()
        return document._add(Floor(document, {"name": ft.Name, "type": ft._id, "level": level._id,
                                              "outline": [(p.X, p.Y) for p in pts], "comments": "", "mark": ""}))

    def get_BoundingBox(self, view):
        d = self._live()._data
        xs, ys = [p[0] for p in d["outline"]], [p[1] for p in d["outline"]]
        z = self._doc.GetElement(ElementId(d["level"])).Elevation
        return BoundingBoxXYZ(XYZ(min(xs), min(ys), z - self._doc.GetElement(self.GetTypeId())._data["thickness"]),
                              XYZ(max(xs), max(ys), z))
