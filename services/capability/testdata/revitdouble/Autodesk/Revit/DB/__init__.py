"""A Python double of exactly the Revit API surface the Nexus Revit epilogue
uses: ElementId (Value, IntegerValue, InvalidElementId, equality), Document
.GetElement, Element (Id, Name, Category, LevelId, GetTypeId, GetType),
FamilyInstance.Host, Category.Name, ElementType (Name, FamilyName), Level, and
the element classes a room is drawn with (Wall, Floor, CurveElement,
ReferencePlane, SketchPlane, FamilyInstance).
Anything else is absent on purpose, so an epilogue that reaches past this
surface fails here before it fails in Revit."""


class ElementId:
    def __init__(self, value):
        self.Value = int(value)

    @property
    def IntegerValue(self):
        return self.Value

    def __eq__(self, other):
        return isinstance(other, ElementId) and other.Value == self.Value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.Value)


ElementId.InvalidElementId = ElementId(-1)


class Category:
    def __init__(self, name):
        self.Name = name


class _NetType:
    def __init__(self, name):
        self.Name = name


class Element:
    def __init__(self, doc, id_int, name, category=None, type_id=None, level_id=None):
        self.Id = ElementId(id_int)
        self.Name = name
        self.Category = Category(category) if category else None
        self._type_id = type_id if type_id is not None else ElementId.InvalidElementId
        self.LevelId = level_id if level_id is not None else ElementId.InvalidElementId
        doc._elements[id_int] = self

    def GetTypeId(self):
        return self._type_id

    def GetType(self):
        return _NetType(type(self).__name__)


class ElementType(Element):
    def __init__(self, doc, id_int, name, family_name, category=None):
        super().__init__(doc, id_int, name, category)
        self.FamilyName = family_name


class Level(Element):
    def __init__(self, doc, id_int, name, elevation):
        super().__init__(doc, id_int, name, "Levels")
        self.Elevation = elevation


class Wall(Element):
    pass


class Floor(Element):
    pass


class CurveElement(Element):
    """A model line: category "Lines"."""


class ReferencePlane(Element):
    pass


class SketchPlane(Element):
    """Has no category in Revit: the epilogue falls back to its .NET type name."""


class FamilyInstance(Element):
    def __init__(self, doc, id_int, name, category, type_id, level_id=None, host=None):
        super().__init__(doc, id_int, name, category, type_id, level_id)
        self.Host = host


class Document:
    def __init__(self):
        self._elements = {}

    def GetElement(self, element_id):
        if not isinstance(element_id, ElementId):
            raise TypeError("GetElement expects an ElementId, got %s" % type(element_id).__name__)
        return self._elements.get(element_id.Value)
