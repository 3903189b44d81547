"""Element filters, what FilteredElementCollector.WherePasses takes and
what its shortcuts (OfClass, OfCategory, WhereElementIsNotElementType) stand
for: each filter's PassesFilter(element) or PassesFilter(document, id), and
an inverted filter passes what the plain one does not. The classes, their
bases and constructors are Revit's (api/revit2017.json)."""
from . import errors
from .elements import BuiltInCategory, ElementType
from .errors import ArgumentException
from .ids import ElementId, NetList, id_of


class ElementFilter:
    """The base: Inverted, and PassesFilter by element or by document and id."""

    def __init__(self, inverted=False):
        self._inverted = bool(inverted)

    Inverted = property(lambda self: self._inverted)
    IsValidObject = property(lambda self: True)

    def PassesFilter(self, *args):
        if len(args) == 2:
            document, element_id = args
            element = document.GetElement(element_id)
        elif len(args) == 1:
            element = args[0]
        else:
            raise TypeError("PassesFilter takes (element) or (document, elementId)")
        errors.require(element, "element")
        return self._passes(element) != self._inverted

    def _passes(self, element):
        raise NotImplementedError


class ElementQuickFilter(ElementFilter):
    """Filters that read only what an element's record holds."""


class ElementSlowFilter(ElementFilter):
    """Filters that need the element itself."""


class ElementLogicalFilter(ElementFilter):
    """And and Or of other filters."""


class ElementCategoryFilter(ElementQuickFilter):
    def __init__(self, category, inverted=False):
        super().__init__(inverted)
        errors.require(category, "categoryId")
        if isinstance(category, ElementId):
            category = id_of(category)
        self._value = int(BuiltInCategory(category))

    def _passes(self, element):
        return element._data.get("category") == self._value

    CategoryId = property(lambda self: ElementId(self._value))


class ElementMulticategoryFilter(ElementQuickFilter):
    def __init__(self, categories, inverted=False):
        super().__init__(inverted)
        errors.require(categories, "categories")
        self._values = {int(BuiltInCategory(id_of(c) if isinstance(c, ElementId) else c)) for c in categories}
        if not self._values:
            raise ArgumentException("The input categories are empty.")

    def _passes(self, element):
        return element._data.get("category") in self._values

    def GetCategoryIds(self):
        return NetList(ElementId(v) for v in sorted(self._values))


class ElementClassFilter(ElementQuickFilter):
    def __init__(self, cls, inverted=False):
        super().__init__(inverted)
        errors.require(cls, "type")
        if not isinstance(cls, type):
            raise ArgumentException("ElementClassFilter takes an API class, e.g. ElementClassFilter(Wall)")
        self._cls = cls

    def _passes(self, element):
        return isinstance(element, self._cls)

    def GetElementClass(self):
        return self._cls


class ElementIsElementTypeFilter(ElementQuickFilter):
    """Passes element types; inverted, the elements that are not types."""

    def _passes(self, element):
        return isinstance(element, ElementType)


class ExclusionFilter(ElementQuickFilter):
    def __init__(self, ids):
        super().__init__(False)
        errors.require(ids, "idsToExclude")
        self._ids = {id_of(i) for i in ids}
        if not self._ids:
            raise ArgumentException("The input element id set is empty.")

    def _passes(self, element):
        return element._id not in self._ids

    def GetIdsToExclude(self):
        return NetList(ElementId(i) for i in sorted(self._ids))


class ElementLevelFilter(ElementSlowFilter):
    def __init__(self, level_id, inverted=False):
        super().__init__(inverted)
        errors.require(level_id, "levelId")
        self._level = id_of(level_id)

    LevelId = property(lambda self: ElementId(self._level))

    def _passes(self, element):
        return element._data.get("level") == self._level


class FamilyInstanceFilter(ElementSlowFilter):
    def __init__(self, document, symbol_id):
        super().__init__(False)
        errors.require(document, "document")
        errors.require(symbol_id, "familySymbolId")
        self._symbol = id_of(symbol_id)

    FamilySymbolId = property(lambda self: ElementId(self._symbol))

    def _passes(self, element):
        from .walls import FamilyInstance
        return isinstance(element, FamilyInstance) and element._data.get("type") == self._symbol


class _Logical(ElementLogicalFilter):
    def __init__(self, *args):
        if len(args) == 2 and all(isinstance(a, ElementFilter) for a in args):
            filters = list(args)
        elif len(args) == 1:
            filters = list(errors.require(args[0], "filters"))
        else:
            raise TypeError("%s takes (filter, filter) or (filters)" % type(self).__name__)
        if not filters or not all(isinstance(f, ElementFilter) for f in filters):
            raise ArgumentException("The filters must be one or more ElementFilters.")
        super().__init__(False)
        self._filters = filters


class LogicalOrFilter(_Logical):
    def _passes(self, element):
        return any(f.PassesFilter(element) for f in self._filters)


class LogicalAndFilter(_Logical):
    def _passes(self, element):
        return all(f.PassesFilter(element) for f in self._filters)
