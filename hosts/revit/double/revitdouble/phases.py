"""Phases: Document.Phases in order, and each element's created and
demolished phase (Element.CreatedPhaseId,
https://www.revitapidocs.com/2025/c6032e01-f7cb-b2ea-3312-697d14216a31.htm:
a new element gets the latest phase of Document.Phases when Revit runs
without a view to inherit from, as the double does; an element cannot be
demolished before it was created)."""
from . import errors
from .elements import BuiltInCategory, Element, ElementType
from .errors import ArgumentException
from .ids import ElementId


class Phase(Element):
    _CATEGORY = BuiltInCategory.OST_Phases

    def _deletable(self):
        return False


class PhaseArray:
    """Document.Phases: the phases in their order; iterable, Size."""

    def __init__(self, phases):
        self._phases = list(phases)

    Size = property(lambda self: len(self._phases))
    IsEmpty = property(lambda self: not self._phases)

    def __iter__(self):
        return iter(self._phases)

    def GetEnumerator(self):
        return iter(self._phases)

    def __len__(self):
        return len(self._phases)


def phases(doc):
    """The document's phases, first to last."""
    return [e for _, e in sorted(doc._elements.items()) if isinstance(e, Phase)]


def phase_id(el, key):
    el._live()
    if isinstance(el, ElementType) or isinstance(el, Phase):
        return ElementId.InvalidElementId
    if key in el._data:
        return ElementId(el._data[key])
    if key == "phase_demolished":
        return ElementId.InvalidElementId
    last = phases(el._doc)
    return last[-1].Id if last else ElementId.InvalidElementId


def set_phase(el, key, value):
    errors.require(value, key == "phase_created" and "CreatedPhaseId" or "DemolishedPhaseId")
    el._live()
    if isinstance(el, ElementType) or isinstance(el, Phase):
        raise errors.InvalidOperationException("The element does not have properties CreatedPhaseId and DemolishedPhaseId.")
    order = [p._id for p in phases(el._doc)]
    target = value.Value if ElementId._version >= 2024 else value.IntegerValue
    if key == "phase_demolished" and target == -1:
        el._set(key, -1)
        return
    if target not in order:
        raise ArgumentException("%s is not the id of a phase of this document." % value)
    created = el.CreatedPhaseId
    demolished = el.DemolishedPhaseId
    c = target if key == "phase_created" else created.Value if ElementId._version >= 2024 else created.IntegerValue
    d = target if key == "phase_demolished" else demolished.Value if ElementId._version >= 2024 else demolished.IntegerValue
    if d != -1 and c in order and order.index(d) < order.index(c):
        raise ArgumentException("Invalid order of phases: An object cannot be demolished before it was created.")
    el._set(key, target)
