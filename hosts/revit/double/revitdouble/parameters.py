"""Parameters: Element.get_Parameter(BuiltInParameter), LookupParameter(name)
and Parameter's getters and Set, which changes the document and so needs an
open transaction."""
import math

from .errors import ArgumentException, InvalidOperationException
from .ids import ElementId
from .netenum import NetEnum


class StorageType(NetEnum):
    # Revit's member None is a Python keyword: a script reaches it as
    # getattr(StorageType, "None"), as under pythonnet.
    locals()["None"] = 0
    Integer = 1
    Double = 2
    String = 3
    ElementId = 4


class BuiltInParameter(NetEnum):
    """The built-in parameters the double models. Scripts use the names; the
    numbers are the double's own and need not match Revit's."""
    INVALID = -1
    ALL_MODEL_INSTANCE_COMMENTS = -1010106
    ALL_MODEL_MARK = -1001203
    ELEM_TYPE_PARAM = -1002052
    WALL_USER_HEIGHT_PARAM = -1001300
    WALL_BASE_OFFSET = -1001108
    WALL_BASE_CONSTRAINT = -1001107
    CURVE_ELEM_LENGTH = -1004005
    WALL_STRUCTURAL_SIGNIFICANT = -1001390
    LEVEL_ELEV = -1007000
    DATUM_TEXT = -1002505
    FAMILY_LEVEL_PARAM = -1002063
    INSTANCE_SILL_HEIGHT_PARAM = -1001364
    WALL_ATTR_WIDTH_PARAM = -1001000
    FAMILY_WIDTH_PARAM = -1001105
    FAMILY_HEIGHT_PARAM = -1001104
    HOST_AREA_COMPUTED = -1012805
    SYMBOL_NAME_PARAM = -1002002
    ROOM_NAME = -1006901
    ROOM_NUMBER = -1006902
    ROOM_AREA = -1006902 - 1
    ROOM_LEVEL_ID = -1006908
    PHASE_CREATED = -1012101
    PHASE_DEMOLISHED = -1012102
    SHEET_NUMBER = -1007401
    SHEET_NAME = -1007400
    VIEW_NAME = -1005110


class _Definition:
    def __init__(self, name):
        self.Name = name


class Spec:
    """How one parameter maps onto an element's data: the key it reads and
    writes (or a function computing it, read-only), its storage and whether
    it is a length (shown in millimetres, the project's display unit)."""

    def __init__(self, bip, name, storage, key=None, compute=None, read_only=False, length=False, check=None):
        self.bip, self.name, self.storage, self.key = bip, name, storage, key
        self.compute, self.read_only, self.length, self.check = compute, read_only or key is None, length, check


class Parameter:
    def __init__(self, element, spec):
        self._el, self._spec = element, spec

    Definition = property(lambda self: _Definition(self._spec.name))
    StorageType = property(lambda self: self._spec.storage)
    IsReadOnly = property(lambda self: self._spec.read_only)
    HasValue = property(lambda self: self._raw() is not None)
    IsShared = property(lambda self: False)

    @property
    def Id(self):
        return ElementId(int(self._spec.bip))

    def _raw(self):
        el = self._el._live()
        if self._spec.compute is not None:
            return self._spec.compute(el)
        return el._data.get(self._spec.key)

    def AsDouble(self):
        v = self._raw()
        return float(v) if self._spec.storage == StorageType.Double and v is not None else 0.0

    def AsInteger(self):
        v = self._raw()
        return int(v) if self._spec.storage == StorageType.Integer and v is not None else 0

    def AsString(self):
        v = self._raw()
        return v if self._spec.storage == StorageType.String else None

    def AsElementId(self):
        v = self._raw()
        if self._spec.storage != StorageType.ElementId:
            return ElementId.InvalidElementId
        return ElementId(v if v is not None else -1)

    def AsValueString(self):
        v = self._raw()
        if v is None:
            return None
        if self._spec.storage == StorageType.ElementId:
            target = self._el._doc.GetElement(ElementId(v))
            return target.Name if target is not None else None
        if self._spec.length:
            return "%g" % round(v * 304.8, 1)
        if self._spec.storage == StorageType.Integer and self._spec.bip == BuiltInParameter.WALL_STRUCTURAL_SIGNIFICANT:
            return "Yes" if v else "No"
        return str(v)

    def Set(self, value):
        """Needs an open transaction; a read-only parameter throws
        InvalidOperationException; a value of the wrong storage type throws
        ArgumentException."""
        el = self._el._live()
        el._doc._guard()
        spec = self._spec
        if spec.read_only:
            raise InvalidOperationException("The parameter %r is read-only." % spec.name)
        value = _coerce(spec, value)
        if spec.check is not None:
            spec.check(el, value)
        el._data[spec.key] = value
        return True


def _coerce(spec, value):
    if spec.storage == StorageType.Double:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ArgumentException("Parameter %r stores a number, got %r" % (spec.name, value))
        return float(value)
    if spec.storage == StorageType.Integer:
        if not isinstance(value, (int, bool)):
            raise ArgumentException("Parameter %r stores an integer, got %r" % (spec.name, value))
        return int(value)
    if spec.storage == StorageType.String:
        if not isinstance(value, str):
            raise ArgumentException("Parameter %r stores text, got %r" % (spec.name, value))
        return value
    if not isinstance(value, ElementId):
        raise ArgumentException("Parameter %r stores an ElementId, got %r" % (spec.name, value))
    return value.Value if ElementId._version >= 2024 else value.IntegerValue


def common_specs():
    return [
        Spec(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS, "Comments", StorageType.String, "comments"),
        Spec(BuiltInParameter.ALL_MODEL_MARK, "Mark", StorageType.String, "mark"),
    ]
