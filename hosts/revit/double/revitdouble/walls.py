"""Walls and the family instances hosted in them (doors, windows)."""

from . import errors
from .elements import (BuiltInCategory, Element, FamilySymbol, Level, LocationCurve, LocationPoint, WallType,
                       box_around_segment, _finite)
from .errors import ArgumentException, ArgumentOutOfRangeException
from .geometry import XYZ, Line
from .ids import ElementId, NetList
from .parameters import BuiltInParameter, Spec, StorageType, common_specs
from .netenum import NetEnum

# The height a wall gets from the overload that takes none; the reference
# does not give the template's default, so the double takes 10 feet.
DEFAULT_WALL_HEIGHT = 10.0


class Wall(Element):
    _CATEGORY = BuiltInCategory.OST_Walls

    @staticmethod
    def Create(document, curve, *args):
        """Two overloads: (document, curve, levelId, structural) with the
        default wall type
        (https://www.revitapidocs.com/2026/4a42066c-bc44-0f99-566c-4e8327bc3bfa.htm)
        and (document, curve, wallTypeId, levelId, height, offset, flip,
        structural)
        (https://www.revitapidocs.com/2025/0ce4c555-4cee-f5fd-2e84-43cacf34ac5c.htm).
        Both throw ArgumentException for a curve not valid for a wall, a
        non-positive height throws ArgumentOutOfRangeException, and without
        an open transaction ModificationOutsideTransactionException."""
        errors.require(document, "document")
        errors.require(curve, "curve")
        if len(args) == 2:
            level_id, structural = args
            type_id, height, offset, flip = document._default_wall_type(), DEFAULT_WALL_HEIGHT, 0.0, False
        elif len(args) == 6:
            type_id, level_id, height, offset, flip, structural = args
        else:
            raise TypeError("Wall.Create: the double models the overloads (document, curve, levelId, structural) and "
                            "(document, curve, wallTypeId, levelId, height, offset, flip, structural); got %d arguments"
                            % (len(args) + 2))
        errors.require(level_id, "levelId")
        errors.require(type_id, "wallTypeId")
        if not isinstance(curve, Line):
            raise ArgumentException("The curve argument is not valid for wall creation (the double models lines).")
        p0, p1 = curve.GetEndPoint(0), curve.GetEndPoint(1)
        if abs(p0.Z - p1.Z) > 1e-9:
            raise ArgumentException("The curve argument is not valid for wall creation: it is not horizontal.")
        _finite(height, "height")
        _finite(offset, "offset")
        if height <= 0:
            raise ArgumentOutOfRangeException("The given value for height must be greater than 0.")
        level = document.GetElement(level_id)
        if not isinstance(level, Level):
            raise ArgumentException("levelId %s is not the id of a level in this document." % level_id)
        wall_type = document.GetElement(type_id)
        if not isinstance(wall_type, WallType):
            raise ArgumentException("wallTypeId %s is not the id of a wall type in this document." % type_id)
        document._guard()
        from .curtain import new_curtain_wall
        return new_curtain_wall(document._add(Wall(document, {
            "name": wall_type.Name, "type": wall_type._id, "level": level._id, "curve": curve,
            "height": float(height), "offset": float(offset), "flipped": bool(flip), "structural": bool(structural),
            "inserts": [], "comments": "", "mark": ""})))

    @property
    def WallType(self):
        return self._doc.GetElement(self.GetTypeId())

    @WallType.setter
    def WallType(self, wall_type):
        if not isinstance(wall_type, WallType):
            raise ArgumentException("WallType must be a WallType of this document.")
        self._set("type", wall_type._id)
        self._data["name"] = wall_type.Name

    @property
    def Width(self):
        return self.WallType.Width

    @property
    def Flipped(self):
        return self._live()._data["flipped"]

    def Flip(self):
        self._set("flipped", not self.Flipped)

    @property
    def Orientation(self):
        d = self._live()._data["curve"].Direction
        o = XYZ(d.Y, -d.X, 0)
        return o.Negate() if self.Flipped else o

    @property
    def Location(self):
        self._live()
        return LocationCurve(self)

    def get_BoundingBox(self, view):
        d = self._live()._data
        c = d["curve"]
        base = self._doc.GetElement(ElementId(d["level"])).Elevation + d["offset"]
        return box_around_segment(c.GetEndPoint(0), c.GetEndPoint(1), self.Width / 2.0, base, base + d["height"])

    def FindInserts(self, add_rect_openings, include_shadows, include_embedded_walls, include_shared_embedded_inserts):
        return NetList(ElementId(i) for i in self._live()._data["inserts"])

    def _specs(self):
        return common_specs() + [
            Spec(BuiltInParameter.WALL_USER_HEIGHT_PARAM, "Unconnected Height", StorageType.Double, "height",
                 length=True, check=_positive),
            Spec(BuiltInParameter.WALL_BASE_OFFSET, "Base Offset", StorageType.Double, "offset", length=True),
            Spec(BuiltInParameter.WALL_BASE_CONSTRAINT, "Base Constraint", StorageType.ElementId, "level",
                 check=_is_level),
            Spec(BuiltInParameter.CURVE_ELEM_LENGTH, "Length", StorageType.Double,
                 compute=lambda e: e._data["curve"].Length, length=True),
            Spec(BuiltInParameter.WALL_STRUCTURAL_SIGNIFICANT, "Structural", StorageType.Integer,
                 compute=lambda e: int(e._data["structural"])),
            Spec(BuiltInParameter.ELEM_TYPE_PARAM, "Type", StorageType.ElementId, compute=lambda e: e._data["type"]),
        ]

    @property
    def CurtainGrid(self):
        from .curtain import curtain_grid
        return curtain_grid(self._live())

    def _dependents(self):
        from .curtain import curtain_dependents
        return list(self._data["inserts"]) + curtain_dependents(self)


def _positive(el, value):
    if value <= 0:
        raise ArgumentOutOfRangeException("The height of a wall must be greater than 0.")


def _is_level(el, value):
    if not isinstance(el._doc._elements.get(value), Level):
        raise ArgumentException("Base Constraint must be the id of a level.")


class StructuralType(NetEnum):
    """Autodesk.Revit.DB.Structure.StructuralType."""
    NonStructural = 0
    Beam = 1
    Brace = 2
    Column = 3
    Footing = 4
    UnknownFraming = 5


class FamilyInstance(Element):
    @property
    def Symbol(self):
        return self._doc.GetElement(self.GetTypeId())

    @property
    def Host(self):
        h = self._live()._data.get("host")
        return self._doc.GetElement(ElementId(h)) if h is not None else None

    @property
    def HostFace(self):
        """The face a face-based instance sits on; null once its host is gone."""
        from .hosting import Reference
        d = self._live()._data
        host = self._doc._elements.get(d.get("host"))
        if d.get("host_face") is None or host is None:
            return None
        ref = Reference(host)
        ref._face = d["host_face"]
        return ref

    @property
    def Location(self):
        self._live()
        return LocationPoint(self)

    @property
    def FacingFlipped(self):
        return self._live()._data.get("facing_flipped", False)

    @property
    def HandFlipped(self):
        return self._live()._data.get("hand_flipped", False)

    def flipFacing(self):
        self._set("facing_flipped", not self.FacingFlipped)
        return True

    def flipHand(self):
        self._set("hand_flipped", not self.HandFlipped)
        return True

    @property
    def FacingOrientation(self):
        host = self.Host
        o = host.Orientation if host is not None else XYZ.BasisY
        return o.Negate() if self.FacingFlipped else o

    def get_BoundingBox(self, view):
        d = self._live()._data
        sym = self.Symbol
        p = d["point"]
        host = self.Host
        base = self._doc.GetElement(ElementId(d["level"])).Elevation if d.get("level", -1) != -1 else p.Z
        z0 = base + d.get("sill", 0.0)
        if host is not None:
            c = host._data["curve"]
            half = sym._data["width"] / 2.0
            a = p.Subtract(c.Direction.Multiply(half))
            b = p.Add(c.Direction.Multiply(half))
            # A little proud of the wall, so a view shows it.
            return box_around_segment(a, b, host.Width / 2.0 + 0.05, z0, z0 + sym._data["height"])
        w = sym._data["width"] / 2.0
        return box_around_segment(p, p, w, z0, z0 + sym._data["height"])

    def _specs(self):
        return common_specs() + [
            Spec(BuiltInParameter.FAMILY_LEVEL_PARAM, "Level", StorageType.ElementId, compute=lambda e: e._data.get("level")),
            Spec(BuiltInParameter.INSTANCE_SILL_HEIGHT_PARAM, "Sill Height", StorageType.Double, "sill", length=True),
            Spec(BuiltInParameter.ELEM_TYPE_PARAM, "Type", StorageType.ElementId, compute=lambda e: e._data["type"]),
        ]

    def _dependents(self):
        # Its tags go with it.
        from .annotation import tags_of
        return tags_of(self._doc, self._id)

    def _before_delete(self):
        host = self._doc._elements.get(self._data.get("host"))
        if host is not None and self._id in host._data["inserts"]:
            host._data["inserts"] = [i for i in host._data["inserts"] if i != self._id]


def new_family_instance(doc, location, symbol, host, level, structural_type):
    """Document.NewFamilyInstance(XYZ, FamilySymbol, Element, Level,
    StructuralType) and its shorter overloads: the symbol, host and level must
    exist in the document and the symbol must be active, else
    ArgumentException
    (https://help.autodesk.com/cloudhelp/2026/ENU/Revit-API-MainReference/files/html/168d4c67-73dd-d7c8-4969-12846eeaddfa.htm).
    A door or window sits on its host wall's line: the double projects the
    point onto it, and inserting it changes the wall (Revit reports the host
    as modified)."""
    errors.require(location, "location")
    errors.require(symbol, "symbol")
    if not isinstance(symbol, FamilySymbol) or doc._elements.get(symbol._id) is not symbol:
        raise ArgumentException("Thrown if the family symbol does not exist in the given document.")
    if host is not None and doc._elements.get(getattr(host, "_id", None)) is not host:
        raise ArgumentException("Thrown if the host does not exist in the given document.")
    if level is not None and (not isinstance(level, Level) or doc._elements.get(level._id) is not level):
        raise ArgumentException("Thrown if the level does not exist in the given document.")
    if not symbol.IsActive:
        raise ArgumentException("The symbol is not active. Call symbol.Activate() first.")
    doc._guard()
    cat = symbol._data["category"]
    hosted = cat in (int(BuiltInCategory.OST_Doors), int(BuiltInCategory.OST_Windows))
    if hosted and not isinstance(host, Wall):
        raise ArgumentException("A %s must be hosted in a wall: pass the wall as host." % symbol.Category.Name[:-1].lower())
    point = location
    level_id = level._id if level is not None else -1
    if isinstance(host, Wall):
        c = host._data["curve"]
        a = c.GetEndPoint(0)
        t = max(0.0, min(c.Length, location.Subtract(a).DotProduct(c.Direction)))
        on = a.Add(c.Direction.Multiply(t))
        point = XYZ(on.X, on.Y, location.Z)
        if level is None:
            level_id = host._data["level"]
    el = doc._add(FamilyInstance(doc, {
        "name": symbol.Name, "category": cat, "type": symbol._id, "level": level_id,
        "host": host._id if host is not None else None, "point": point,
        "sill": 2.95 if cat == int(BuiltInCategory.OST_Windows) else 0.0,
        "structural_type": int(structural_type), "comments": "", "mark": ""}))
    if isinstance(host, Wall):
        host._data["inserts"] = host._data["inserts"] + [el._id]
    return el
