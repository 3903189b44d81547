"""Views: the default 3D view, a floor plan per level, and the view family
types that create more. Views are elements, so changing one (a section box,
a crop box) is a change to the document like any other."""

from . import errors
from .elements import BuiltInCategory, Element, ElementType
from .errors import ArgumentException
from .geometry import BoundingBoxXYZ
from .netenum import NetEnum


class ViewType(NetEnum):
    Undefined = 0
    FloorPlan = 1
    CeilingPlan = 2
    Elevation = 3
    ThreeD = 4
    Section = 5
    DrawingSheet = 6
    Schedule = 7


class ViewFamily(NetEnum):
    Invalid = 0
    ThreeDimensional = 1
    FloorPlan = 2
    Sheet = 3
    Schedule = 4


class ViewFamilyType(ElementType):
    ViewFamily = property(lambda self: ViewFamily(self._live()._data["view_family"]))


class View(Element):
    _CATEGORY = BuiltInCategory.OST_Views

    ViewType = property(lambda self: ViewType(self._live()._data["view_type"]))
    IsTemplate = property(lambda self: False)

    @property
    def CropBox(self):
        b = self._live()._data.get("crop")
        return BoundingBoxXYZ(b.Min, b.Max) if b is not None else None

    @CropBox.setter
    def CropBox(self, box):
        errors.require(box, "CropBox")
        self._set("crop", BoundingBoxXYZ(box.Min, box.Max))

    @property
    def CropBoxActive(self):
        return bool(self._live()._data.get("crop_active", False))

    @CropBoxActive.setter
    def CropBoxActive(self, value):
        self._set("crop_active", bool(value))

    def _deletable(self):
        # A project keeps at least one view open; the double keeps its seed views.
        return self._data.get("seed") is not True


class View3D(View):
    @staticmethod
    def CreateIsometric(document, view_family_type_id):
        errors.require(document, "document")
        vft = document.GetElement(view_family_type_id)
        if not isinstance(vft, ViewFamilyType) or vft.ViewFamily != ViewFamily.ThreeDimensional:
            raise ArgumentException("viewFamilyTypeId is not a three-dimensional ViewFamilyType.")
        document._guard()
        n = sum(1 for e in document._elements.values() if isinstance(e, View3D)) + 1
        return document._add(View3D(document, {"name": "3D View %d" % n, "view_type": int(ViewType.ThreeD),
                                               "type": vft._id}))

    @property
    def IsSectionBoxActive(self):
        return bool(self._live()._data.get("section_active", False))

    @IsSectionBoxActive.setter
    def IsSectionBoxActive(self, value):
        self._set("section_active", bool(value))

    def SetSectionBox(self, box):
        errors.require(box, "boundingBox")
        self._set("section", BoundingBoxXYZ(box.Min, box.Max))
        self._data["section_active"] = True

    def GetSectionBox(self):
        b = self._live()._data.get("section")
        return BoundingBoxXYZ(b.Min, b.Max) if b is not None else None

    IsPerspective = property(lambda self: False)


class ViewPlan(View):
    @property
    def GenLevel(self):
        return self._doc.GetElement(self.LevelId)
