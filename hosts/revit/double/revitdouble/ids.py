"""ElementId and the .NET collections the API hands back."""
from .errors import InvalidOperationException

_INT32_MAX = 2 ** 31 - 1


class ElementId:
    """An element's id. Value is the 64-bit id of Revit 2024 and later
    (https://www.revitapidocs.com/2026/6f216e39-b66d-5df5-c60c-b9aaccb1e28a.htm);
    IntegerValue, deprecated in 2024 and gone in 2026
    (https://www.revitapidocs.com/2025/f7074647-9521-0f64-d2e2-eb2401aace85.htm),
    exists only while the double plays a version that still has it, and throws
    InvalidOperationException for a value past 32 bits."""

    __slots__ = ("_value",)
    # The Revit version the double plays; set by the Application.
    _version = 2026

    def __init__(self, value):
        # The constructors take an integer (Int32, and Int64 since 2024) or a
        # BuiltInCategory / BuiltInParameter; a string is refused as .NET
        # refuses it.
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("No constructor of ElementId matches (%s); pass an integer" % type(value).__name__)
        self._value = int(value)

    def __getattribute__(self, name):
        v = object.__getattribute__(ElementId, "_version")
        if name == "Value" and v < 2024:
            raise AttributeError("'ElementId' object has no attribute 'Value' (Revit %d)" % v)
        if name == "IntegerValue" and v >= 2026:
            raise AttributeError("'ElementId' object has no attribute 'IntegerValue' (Revit %d)" % v)
        return object.__getattribute__(self, name)

    @property
    def Value(self):
        return self._value

    @property
    def IntegerValue(self):
        if abs(self._value) > _INT32_MAX:
            raise InvalidOperationException("The value of the element id is too large to be represented as a 32-bit integer.")
        return self._value

    def Compare(self, other):
        return (self._value > other._value) - (self._value < other._value)

    def __eq__(self, other):
        return isinstance(other, ElementId) and other._value == self._value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return self._value < other._value

    def __hash__(self):
        return hash(self._value)

    def ToString(self):
        return str(self._value)

    def __str__(self):
        return str(self._value)

    def __repr__(self):
        return "<ElementId %d>" % self._value


ElementId.InvalidElementId = ElementId(-1)


class NetList(list):
    """An IList/ICollection as pythonnet hands it over: iterable, len(), and
    the .NET Count."""

    @property
    def Count(self):
        return len(self)

    def Add(self, item):
        self.append(item)

    def Contains(self, item):
        return item in self


def _id_of_int(value):
    """An ElementId of an int the double already holds (no checks)."""
    eid = object.__new__(ElementId)
    eid._value = value
    return eid


def id_of(value):
    """The int behind an ElementId (internal use)."""
    return value._value
