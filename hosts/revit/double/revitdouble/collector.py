"""FilteredElementCollector. Extraction or iteration without a filter throws
InvalidOperationException, as ToElements documents
(https://www.revitapidocs.com/2025/732b4a0d-62d8-b86d-120b-8ea3d9713b34.htm)."""
from . import errors
from .elements import BuiltInCategory, ElementType
from .errors import ArgumentException, InvalidOperationException
from .ids import ElementId, NetList, _id_of_int
from .filters import ElementFilter


class FilteredElementCollector:
    def __init__(self, document, view_id=None):
        self._doc = errors.require(document, "document")
        self._filters = []
        if view_id is not None:
            # Elements visible in a view: the double shows every model element in every view.
            self._filters.append(lambda e: not isinstance(e, ElementType) and e.Category is not None
                                 and e.Category.Name != "Views")

    def _add(self, f):
        self._filters.append(f)
        return self

    def OfClass(self, cls):
        errors.require(cls, "type")
        if not isinstance(cls, type):
            raise ArgumentException("OfClass takes an API class, e.g. OfClass(Wall)")
        return self._add(lambda e: isinstance(e, cls))

    def OfCategory(self, category):
        errors.require(category, "category")
        value = int(BuiltInCategory(category))
        return self._add(lambda e: e._data.get("category") == value)

    def OfCategoryId(self, category_id):
        return self.OfCategory(BuiltInCategory(category_id.Value if ElementId._version >= 2024 else category_id.IntegerValue))

    def WhereElementIsNotElementType(self):
        return self._add(lambda e: not isinstance(e, ElementType))

    def WhereElementIsElementType(self):
        return self._add(lambda e: isinstance(e, ElementType))

    def Excluding(self, ids):
        gone = {i.Value if ElementId._version >= 2024 else i.IntegerValue for i in ids}
        if not gone:
            raise ArgumentException("The input element id set is empty.")
        return self._add(lambda e: e._id not in gone)

    def WherePasses(self, element_filter):
        errors.require(element_filter, "filter")
        if not isinstance(element_filter, ElementFilter):
            raise ArgumentException("WherePasses takes an ElementFilter.")
        return self._add(element_filter.PassesFilter)

    def _matches(self):
        if not self._filters:
            raise InvalidOperationException(
                "The collector does not have a filter applied. Extraction or iteration of elements is not permitted "
                "without a filter.")
        # By id, as Revit answers; the table is nearly in id order already,
        # which sorting its ids alone makes cheap.
        table, filters = self._doc._elements, self._filters
        if len(filters) == 1:
            f = filters[0]
            return [e for e in (table[i] for i in sorted(table)) if f(e)]
        return [e for e in (table[i] for i in sorted(table)) if all(f(e) for f in filters)]

    def ToElements(self):
        return NetList(self._matches())

    def ToElementIds(self):
        return NetList(_id_of_int(e._id) for e in self._matches())

    def FirstElement(self):
        m = self._matches()
        return m[0] if m else None

    def FirstElementId(self):
        m = self._matches()
        return m[0].Id if m else ElementId.InvalidElementId

    def GetElementCount(self):
        return len(self._matches())

    def __iter__(self):
        return iter(self._matches())

    def GetEnumerator(self):
        return iter(self._matches())
