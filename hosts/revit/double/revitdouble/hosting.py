"""Face-based families and references. A face-based family is placed on a
face of a host (NewFamilyInstance(Reference, XYZ, XYZ, FamilySymbol), the
face from HostObjectUtils.GetSideFaces); its Family's FamilyPlacementType is
WorkPlaneBased. Unlike a door or window, which is deleted with its wall, a
face-based instance outlives its host: it stays where it was with no host
(Host and HostFace null), which is what an audit of unhosted families looks
for (https://www.xrev.com.au/news/face-based-families-whats-wrong-with-them/:
"when the host is deleted ... the family remains"). Families placed on a
level only (furniture) are OneLevelBased and have no host by design."""

from . import errors
from .elements import Element, FamilySymbol
from .errors import ArgumentException
from .ids import ElementId, NetList
from .netenum import NetEnum


class FamilyPlacementType(NetEnum):
    """Its members as api/revit2017.json lists them (the numbers are the double's)."""
    Invalid = -1
    OneLevelBased = 0
    OneLevelBasedHosted = 1
    TwoLevelsBased = 2
    ViewBased = 3
    WorkPlaneBased = 4
    CurveBased = 5
    CurveBasedDetail = 6
    CurveDrivenStructural = 7
    Adaptive = 8


class ShellLayerType(NetEnum):
    Exterior = 0
    Interior = 1


class Reference:
    """A reference to an element, or to one face of it."""

    def __init__(self, element):
        errors.require(element, "element")
        if not isinstance(element, Element):
            raise ArgumentException("Reference takes an element.")
        self._element_id = element._id
        self._face = None

    ElementId = property(lambda self: ElementId(self._element_id))

    def __eq__(self, other):
        return isinstance(other, Reference) and (other._element_id, other._face) == (self._element_id, self._face)

    def __hash__(self):
        return hash((self._element_id, self._face))


class HostObjectUtils:
    @staticmethod
    def GetSideFaces(host_object, side):
        """The exterior or interior side face of a wall, as one reference."""
        from .walls import Wall
        errors.require(host_object, "hostObject")
        if not isinstance(host_object, Wall):
            raise ArgumentException("hostObject is not a wall.")
        ref = Reference(host_object._live())
        ref._face = "exterior" if ShellLayerType(side) == ShellLayerType.Exterior else "interior"
        return NetList([ref])


def new_face_based_instance(doc, reference, location, ref_direction, symbol):
    """NewFamilyInstance(Reference face, XYZ location, XYZ referenceDirection,
    FamilySymbol): only a WorkPlaneBased family goes on a face."""
    errors.require(reference, "reference")
    errors.require(location, "location")
    errors.require(ref_direction, "referenceDirection")
    errors.require(symbol, "symbol")
    if not isinstance(symbol, FamilySymbol) or doc._elements.get(symbol._id) is not symbol:
        raise ArgumentException("Thrown if the family symbol does not exist in the given document.")
    if symbol.Family.FamilyPlacementType != FamilyPlacementType.WorkPlaneBased:
        raise ArgumentException("The family of the symbol is not face based: it cannot be placed on a face.")
    if not symbol.IsActive:
        raise ArgumentException("The symbol is not active. Call symbol.Activate() first.")
    host = doc._elements.get(reference._element_id)
    if host is None or reference._face is None:
        raise ArgumentException("The reference is not a face of an element of this document.")
    doc._guard()
    from .walls import FamilyInstance
    return doc._add(FamilyInstance(doc, {
        "name": symbol.Name, "category": symbol._data["category"], "type": symbol._id, "level": host._data.get("level", -1),
        "host": host._id, "host_face": reference._face, "point": location, "sill": 0.0,
        "structural_type": 0, "comments": "", "mark": ""}))
