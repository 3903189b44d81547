"""UnitUtils and UnitTypeId: Revit's internal length unit is the decimal
foot whatever the project's display units
(https://www.revitapidocs.com/2025/b5e8d065-d274-62f8-7b5d-89722f7c44f3.htm);
a value that is not finite, or a unit id that is not a unit, throws
ArgumentException."""
import math

from . import errors
from .errors import ArgumentException


class ForgeTypeId:
    """ForgeTypeId() and ForgeTypeId(typeId), its two constructors
    (https://www.revitapidocs.com/2024/4777ba3d-8f1e-399c-8f3a-cca084b2d42b.htm)."""

    def __init__(self, type_id=""):
        errors.require(type_id, "typeId")
        self._type_id = str(type_id)

    TypeId = property(lambda self: self._type_id)

    def Empty(self):
        return not self._type_id

    def __eq__(self, other):
        return isinstance(other, ForgeTypeId) and other.TypeId == self.TypeId

    def __hash__(self):
        return hash(self.TypeId)


# Internal units (feet, square feet, radians) per one of each unit, by type id.
_TO_INTERNAL = {
    "autodesk.unit.unit:millimeters-1.0.1": 1.0 / 304.8,
    "autodesk.unit.unit:centimeters-1.0.1": 1.0 / 30.48,
    "autodesk.unit.unit:meters-1.0.1": 1.0 / 0.3048,
    "autodesk.unit.unit:feet-1.0.1": 1.0,
    "autodesk.unit.unit:inches-1.0.1": 1.0 / 12.0,
    "autodesk.unit.unit:squareMeters-1.0.1": 1.0 / 0.09290304,
    "autodesk.unit.unit:squareFeet-1.0.1": 1.0,
    "autodesk.unit.unit:degrees-1.0.1": math.pi / 180.0,
    "autodesk.unit.unit:radians-1.0.1": 1.0,
}


class UnitTypeId:
    """Static properties naming units
    (https://www.revitapidocs.com/2024/bc1b6454-f10a-66dc-9268-1dccbc403f78.htm)."""
    Millimeters = ForgeTypeId("autodesk.unit.unit:millimeters-1.0.1")
    Centimeters = ForgeTypeId("autodesk.unit.unit:centimeters-1.0.1")
    Meters = ForgeTypeId("autodesk.unit.unit:meters-1.0.1")
    Feet = ForgeTypeId("autodesk.unit.unit:feet-1.0.1")
    Inches = ForgeTypeId("autodesk.unit.unit:inches-1.0.1")
    SquareMeters = ForgeTypeId("autodesk.unit.unit:squareMeters-1.0.1")
    SquareFeet = ForgeTypeId("autodesk.unit.unit:squareFeet-1.0.1")
    Degrees = ForgeTypeId("autodesk.unit.unit:degrees-1.0.1")
    Radians = ForgeTypeId("autodesk.unit.unit:radians-1.0.1")


def _check(value, unit):
    errors.require(unit, "unitTypeId")
    if not isinstance(unit, ForgeTypeId) or unit.TypeId not in _TO_INTERNAL:
        raise ArgumentException("unitTypeId is not a unit identifier.")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ArgumentException("The given value for value is not finite")


class UnitUtils:
    @staticmethod
    def ConvertToInternalUnits(value, unit):
        _check(value, unit)
        return float(value) * _TO_INTERNAL[unit.TypeId]

    @staticmethod
    def ConvertFromInternalUnits(value, unit):
        _check(value, unit)
        return float(value) / _TO_INTERNAL[unit.TypeId]

    @staticmethod
    def IsUnit(unit):
        """A null id throws ArgumentNullException
        (https://apidocs.co/apps/revit/2021/da854415-776c-ecf2-6d18-22d343fb5ebc.htm)."""
        errors.require(unit, "unitTypeId")
        return isinstance(unit, ForgeTypeId) and unit.TypeId in _TO_INTERNAL


class Units:
    """Document.GetUnits(): the double's project displays millimetres."""

    def GetFormatOptions(self, spec):
        return _FormatOptions()


class _FormatOptions:
    def GetUnitTypeId(self):
        return UnitTypeId.Millimeters
