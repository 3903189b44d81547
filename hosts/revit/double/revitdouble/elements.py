"""Element and the element classes a building is drawn with: levels, walls
and their types, family symbols and the instances hosted in walls."""
import uuid

from . import errors
from .errors import ArgumentException, InvalidObjectException
from .geometry import XYZ, BoundingBoxXYZ, Line
from .ids import ElementId, NetList
from .journal import Data as _Data
from .parameters import BuiltInParameter, Parameter, Spec, StorageType, common_specs
from .netenum import NetEnum
from .locations import LocationCurve, LocationPoint, box_around_segment  # noqa: F401 - elements' own names


class BuiltInCategory(NetEnum):
    """The categories the double models (scripts use the names)."""
    INVALID = -1
    OST_Walls = -2000011
    OST_Doors = -2000023
    OST_Windows = -2000014
    OST_Floors = -2000032
    OST_Levels = -2000240
    OST_Views = -2000279
    OST_Lines = -2000051
    OST_GenericModel = -2000151
    OST_Furniture = -2000080
    OST_Rooms = -2000160
    OST_CLines = -2000083
    OST_Grids = -2000220
    OST_CurtainWallPanels = -2000170
    OST_CurtainWallMullions = -2000171
    OST_CurtainGridsWall = -2000321
    OST_LightingFixtures = -2001120
    OST_TitleBlocks = -2000280
    OST_Sheets = -2003100
    OST_Viewports = -2000510
    OST_DoorTags = -2000460
    OST_WindowTags = -2000470
    OST_Phases = -2000330


CATEGORY_NAMES = {
    BuiltInCategory.OST_Walls: "Walls", BuiltInCategory.OST_Doors: "Doors", BuiltInCategory.OST_Windows: "Windows",
    BuiltInCategory.OST_Floors: "Floors", BuiltInCategory.OST_Levels: "Levels", BuiltInCategory.OST_Views: "Views",
    BuiltInCategory.OST_Lines: "Lines", BuiltInCategory.OST_GenericModel: "Generic Models",
    BuiltInCategory.OST_Furniture: "Furniture", BuiltInCategory.OST_Rooms: "Rooms",
    BuiltInCategory.OST_CLines: "Reference Planes", BuiltInCategory.OST_Grids: "Grids",
    BuiltInCategory.OST_CurtainWallPanels: "Curtain Panels", BuiltInCategory.OST_CurtainWallMullions: "Curtain Wall Mullions",
    BuiltInCategory.OST_CurtainGridsWall: "Curtain Grids", BuiltInCategory.OST_LightingFixtures: "Lighting Fixtures",
    BuiltInCategory.OST_TitleBlocks: "Title Blocks", BuiltInCategory.OST_Sheets: "Sheets",
    BuiltInCategory.OST_Viewports: "Viewports", BuiltInCategory.OST_DoorTags: "Door Tags",
    BuiltInCategory.OST_WindowTags: "Window Tags",
    BuiltInCategory.OST_Phases: "Phases",
}


class Category:
    def __init__(self, bic):
        self._bic = BuiltInCategory(bic)

    Name = property(lambda self: CATEGORY_NAMES[self._bic])
    Id = property(lambda self: ElementId(int(self._bic)))
    BuiltInCategory = property(lambda self: self._bic)

    def __eq__(self, other):
        return isinstance(other, Category) and other._bic == self._bic

    def __hash__(self):
        return hash(self._bic)


class _NetType:
    """What Element.GetType() answers: the .NET class, with its Name."""

    def __init__(self, cls):
        self.Name = cls.__name__
        self.FullName = "Autodesk.Revit.DB." + cls.__name__


class Element:
    """An element of a document. Its state lives in _data, which each open
    transaction scope journals before its first change and a rollback puts
    back; other elements are referred to by id, never held."""

    _CATEGORY = None

    def __init__(self, doc, data):
        self._doc = doc
        self._id = None
        self._data = _Data(self, data)
        self._data.setdefault("uid", str(uuid.uuid4()))
        if self._CATEGORY is not None:
            self._data.setdefault("category", int(self._CATEGORY))

    def _live(self):
        if self._doc._elements.get(self._id) is not self:
            raise InvalidObjectException(errors.INVALID_OBJECT)
        return self

    def _set(self, key, value):
        self._live()
        self._doc._guard()
        self._data[key] = value

    IsValidObject = property(lambda self: self._doc._elements.get(self._id) is self)
    Document = property(lambda self: self._doc)

    @property
    def Id(self):
        return ElementId(self._id)

    @property
    def UniqueId(self):
        return self._data["uid"]

    @property
    def Name(self):
        return self._live()._data.get("name", "")

    @Name.setter
    def Name(self, value):
        errors.require(value, "name")
        self._set("name", str(value))

    @property
    def Category(self):
        c = self._live()._data.get("category")
        return Category(c) if c is not None else None

    @property
    def OwnerViewId(self):
        """The view a view-specific element (a tag, a title block, a
        viewport) belongs to; InvalidElementId for a model element."""
        return ElementId(self._live()._data.get("view", -1))

    @property
    def LevelId(self):
        return ElementId(self._live()._data.get("level", -1))

    def GetTypeId(self):
        return ElementId(self._live()._data.get("type", -1))

    def GetType(self):
        return _NetType(type(self))

    def ChangeTypeId(self, type_id):
        """Changes the element's type to one of its own kind: a wall's to a
        wall type, a door's to a door type; any other throws
        ArgumentException
        (https://www.revitapidocs.com/2019/479b5d94-abd3-db42-27d7-6a3eda12f285.htm; it answers InvalidElementId when no new element was made)."""
        errors.require(type_id, "typeId")
        new = self._doc.GetElement(type_id)
        old = self._doc.GetElement(self.GetTypeId())
        if not isinstance(new, ElementType) or old is None or type(new) is not type(old) \
                or new._data.get("category") != old._data.get("category"):
            raise ArgumentException("The type %s is not a valid type for element %s." % (type_id, self.Id))
        self._set("type", new._id)
        self._data["name"] = new.Name
        return ElementId.InvalidElementId

    @property
    def CreatedPhaseId(self):
        """The phase the element was created in: a new element gets the
        project's last phase (New Construction)
        (https://www.revitapidocs.com/2025/c6032e01-f7cb-b2ea-3312-697d14216a31.htm; demolished before created throws ArgumentException)."""
        from .phases import phase_id
        return phase_id(self, "phase_created")

    @CreatedPhaseId.setter
    def CreatedPhaseId(self, value):
        from .phases import set_phase
        set_phase(self, "phase_created", value)

    @property
    def DemolishedPhaseId(self):
        from .phases import phase_id
        return phase_id(self, "phase_demolished")

    @DemolishedPhaseId.setter
    def DemolishedPhaseId(self, value):
        from .phases import set_phase
        set_phase(self, "phase_demolished", value)

    @property
    def WorksetId(self):
        from .worksharing import WorksetId, _workset_of
        return WorksetId(_workset_of(self._doc, self._live()._id))

    @property
    def Pinned(self):
        return bool(self._live()._data.get("pinned", False))

    @Pinned.setter
    def Pinned(self, value):
        self._set("pinned", bool(value))

    @property
    def Location(self):
        return None

    def get_BoundingBox(self, view):
        return None

    def _specs(self):
        return common_specs()

    def get_Parameter(self, which):
        self._live()
        for spec in self._specs():
            if (isinstance(which, BuiltInParameter) and spec.bip == which) or spec.name == getattr(which, "Name", None):
                return Parameter(self, spec)
        return None

    def LookupParameter(self, name):
        self._live()
        return next((Parameter(self, s) for s in self._specs() if s.name == name), None)

    def GetParameters(self, name):
        p = self.LookupParameter(name)
        return NetList([p] if p is not None else [])

    @property
    def Parameters(self):
        self._live()
        return NetList(Parameter(self, s) for s in self._specs())

    def _dependents(self):
        """Ids of the elements that cannot exist without this one."""
        return []

    def _deletable(self):
        return True

    def _before_delete(self):
        pass

    def __eq__(self, other):
        return isinstance(other, Element) and other._doc is self._doc and other._id == self._id

    def __hash__(self):
        return hash((id(self._doc), self._id))

    def __repr__(self):
        return "<%s #%s %r>" % (type(self).__name__, self._id, self._data.get("name", ""))


class ElementType(Element):
    @property
    def FamilyName(self):
        return self._live()._data.get("family", "")

    def _specs(self):
        # Beside its name, a type holds the project's type parameters
        # (Manufacturer, Cost, Fire Rating, ...) a generated project gives it.
        return [Spec(BuiltInParameter.SYMBOL_NAME_PARAM, "Type Name", StorageType.String, compute=lambda e: e.Name)] + [
            Spec(BuiltInParameter.INVALID, name, StorageType.String, ("param", name))
            for name in self._data.get("param_names", ())]

    def _deletable(self):
        # A type that elements still use cannot be deleted in the double.
        return not any(e._data.get("type") == self._id for e in self._doc._elements.values())


class WallKind(NetEnum):
    Unknown = -1
    Basic = 0
    Curtain = 1
    Stacked = 2


class WallType(ElementType):
    _CATEGORY = BuiltInCategory.OST_Walls
    Kind = property(lambda self: WallKind(self._live()._data.get("kind", 0)))
    Width = property(lambda self: self._live()._data["width"])


class LevelType(ElementType):
    _CATEGORY = BuiltInCategory.OST_Levels


class Family(Element):
    @property
    def FamilyCategory(self):
        return Category(self._live()._data["family_category"])

    @property
    def FamilyPlacementType(self):
        from .hosting import FamilyPlacementType
        return FamilyPlacementType(self._live()._data.get("placement", 1))

    def GetFamilySymbolIds(self):
        return NetList(ElementId(i) for i, e in self._doc._elements.items()
                       if isinstance(e, FamilySymbol) and e._data.get("family_id") == self._id)


class FamilySymbol(ElementType):
    """A loadable family's type (a door size). IsActive and Activate
    (https://www.revitapidocs.com/2025/b4e09402-f6cd-3f48-d01e-ecb87375bac5.htm):
    an unused symbol may be inactive, and NewFamilyInstance refuses an
    inactive one; activating is a change, so it needs a transaction."""

    @property
    def IsActive(self):
        return bool(self._live()._data.get("active", False))

    def Activate(self):
        if not self.IsActive:
            self._set("active", True)

    @property
    def Family(self):
        return self._doc.GetElement(ElementId(self._live()._data["family_id"]))

    def _specs(self):
        return super()._specs() + [
            Spec(BuiltInParameter.FAMILY_WIDTH_PARAM, "Width", StorageType.Double, "width", length=True),
            Spec(BuiltInParameter.FAMILY_HEIGHT_PARAM, "Height", StorageType.Double, "height", length=True),
        ]


class Level(Element):
    _CATEGORY = BuiltInCategory.OST_Levels

    @staticmethod
    def Create(document, elevation):
        """https://www.revitapidocs.com/2025/d661b7cd-dec8-6ae6-a753-b14ac2568772.htm;
        a new level is named after the highest-numbered "Level N"."""
        errors.require(document, "document")
        _finite(elevation, "elevation")
        document._guard()
        numbers = [int(e.Name.split()[-1]) for e in document._elements.values()
                   if isinstance(e, Level) and e.Name.startswith("Level ") and e.Name.split()[-1].isdigit()]
        level_type = next((i for i, e in document._elements.items() if isinstance(e, LevelType)), -1)
        return document._add(Level(document, {"name": "Level %d" % (max(numbers, default=0) + 1),
                                              "elevation": float(elevation), "type": level_type}))

    @property
    def Elevation(self):
        return self._live()._data["elevation"]

    @Elevation.setter
    def Elevation(self, value):
        _finite(value, "elevation")
        self._set("elevation", float(value))

    # Read-only in Revit: the elevation from the project origin.
    ProjectElevation = property(lambda self: self._live()._data["elevation"])

    @Element.Name.setter
    def Name(self, value):
        errors.require(value, "name")
        if any(isinstance(e, Level) and e is not self and e.Name == value for e in self._doc._elements.values()):
            raise ArgumentException("The name %r is already in use by another level." % value)
        self._set("name", str(value))

    def _specs(self):
        return common_specs() + [
            Spec(BuiltInParameter.LEVEL_ELEV, "Elevation", StorageType.Double, "elevation", length=True),
            Spec(BuiltInParameter.DATUM_TEXT, "Name", StorageType.String, "name"),
        ]

    def _dependents(self):
        return [i for i, e in self._doc._elements.items() if e._data.get("level") == self._id and i != self._id]


def _finite(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise ArgumentException("The given value for %s is not finite." % name)
