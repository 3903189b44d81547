"""Tags: IndependentTag.Create(document, ownerDBViewId, referenceToTag,
addLeader, tagMode, tagOrientation, point), since Revit 2018
(https://www.revitapidocs.com/2019/1f622654-786a-b8fd-1f81-278698bacd5b.htm):
an owner view that is not a view, or is a 3D view (the double has no locked
3D views), throws ArgumentException, as does a reference that cannot be
tagged; tagging by category needs a tag family of the element's category
loaded (the double throws ArgumentException naming the category when none
is). A tag's text is the tagged element's Mark, what Revit's door and
window tags show."""

from . import errors
from .elements import BuiltInCategory, Element, FamilySymbol
from .errors import ArgumentException
from .hosting import Reference
from .ids import ElementId
from .views import View, View3D
from .netenum import NetEnum

_TAG_CATEGORY = {int(BuiltInCategory.OST_Doors): BuiltInCategory.OST_DoorTags,
                 int(BuiltInCategory.OST_Windows): BuiltInCategory.OST_WindowTags}


class TagMode(NetEnum):
    TM_ADDBY_CATEGORY = 0
    TM_ADDBY_MULTICATEGORY = 1
    TM_ADDBY_MATERIAL = 2


class TagOrientation(NetEnum):
    Horizontal = 0
    Vertical = 1


class IndependentTag(Element):
    @staticmethod
    def Create(document, owner_view_id, reference, add_leader, tag_mode, tag_orientation, point):
        errors.require(document, "document")
        errors.require(owner_view_id, "ownerDBViewId")
        errors.require(reference, "referenceToTag")
        errors.require(point, "pnt")
        view = document.GetElement(owner_view_id)
        if not isinstance(view, View):
            raise ArgumentException("The ElementId ownerDBViewId does not correspond to a View.")
        if isinstance(view, View3D):
            raise ArgumentException("The 3D view ownerDBViewId is not locked.")
        if not isinstance(reference, Reference):
            raise ArgumentException("The reference can not be tagged.")
        target = document._elements.get(reference._element_id)
        tag_cat = _TAG_CATEGORY.get(target._data.get("category")) if target is not None else None
        if tag_cat is None:
            raise ArgumentException("The reference can not be tagged.")
        tag_type = next((e for _, e in sorted(document._elements.items())
                         if isinstance(e, FamilySymbol) and e._data.get("category") == int(tag_cat)), None)
        if tag_type is None:
            raise ArgumentException("No tag family of category %s is loaded." % tag_cat.name)
        document._guard()
        return document._add(IndependentTag(document, {
            "category": int(tag_cat), "type": tag_type._id, "name": tag_type.Name, "view": view._id,
            "tagged": target._id, "head": point, "leader": bool(add_leader), "orientation": int(tag_orientation)}))

    TaggedLocalElementId = property(lambda self: ElementId(self._live()._data["tagged"]))

    @property
    def TagText(self):
        target = self._doc._elements.get(self._live()._data["tagged"])
        return target._data.get("mark", "") if target is not None else ""

    @property
    def TagHeadPosition(self):
        return self._live()._data["head"]

    @TagHeadPosition.setter
    def TagHeadPosition(self, point):
        errors.require(point, "TagHeadPosition")
        self._set("head", point)

    @property
    def HasLeader(self):
        return self._live()._data["leader"]

    @HasLeader.setter
    def HasLeader(self, value):
        self._set("leader", bool(value))

    IsOrphaned = property(lambda self: self._live()._data["tagged"] not in self._doc._elements)


def tags_of(doc, element_id):
    return [i for i, e in doc._elements.items() if isinstance(e, IndependentTag) and e._data["tagged"] == element_id]
