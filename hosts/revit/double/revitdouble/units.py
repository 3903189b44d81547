"""UnitUtils and UnitTypeId: Revit's internal length unit is the decimal
foot whatever the project's display units
(https://www.revitapidocs.com/2025/b5e8d065-d274-62f8-7b5d-89722f7c44f3.htm);
a value that is not finite, or a unit id that is not a unit, throws
ArgumentException."""
import math

from . import errors
from .errors import ArgumentException


class ForgeTypeId:
    def __init__(self, type_id, to_internal):
        self.TypeId = type_id
        self._factor = to_internal

    def __eq__(self, other):
        return isinstance(other, ForgeTypeId) and other.TypeId == self.TypeId

    def __hash__(self):
        return hash(self.TypeId)


class UnitTypeId:
    Millimeters = ForgeTypeId("autodesk.unit.unit:millimeters-1.0.1", 1.0 / 304.8)
    Centimeters = ForgeTypeId("autodesk.unit.unit:centimeters-1.0.1", 1.0 / 30.48)
    Meters = ForgeTypeId("autodesk.unit.unit:meters-1.0.1", 1.0 / 0.3048)
    Feet = ForgeTypeId("autodesk.unit.unit:feet-1.0.1", 1.0)
    Inches = ForgeTypeId("autodesk.unit.unit:inches-1.0.1", 1.0 / 12.0)
    SquareMeters = ForgeTypeId("autodesk.unit.unit:squareMeters-1.0.1", 1.0 / 0.09290304)
    SquareFeet = ForgeTypeId("autodesk.unit.unit:squareFeet-1.0.1", 1.0)
    Degrees = ForgeTypeId("autodesk.unit.unit:degrees-1.0.1", math.pi / 180.0)
    Radians = ForgeTypeId("autodesk.unit.unit:radians-1.0.1", 1.0)


def _check(value, unit):
    errors.require(unit, "unitTypeId")
    if not isinstance(unit, ForgeTypeId):
        raise ArgumentException("unitTypeId is not a unit identifier.")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ArgumentException("The given value for value is not finite")


class UnitUtils:
    @staticmethod
    def ConvertToInternalUnits(value, unit):
        _check(value, unit)
        return float(value) * unit._factor

    @staticmethod
    def ConvertFromInternalUnits(value, unit):
        _check(value, unit)
        return float(value) / unit._factor

    @staticmethod
    def IsUnit(unit):
        return isinstance(unit, ForgeTypeId)


class Units:
    """Document.GetUnits(): the double's project displays millimetres."""

    def GetFormatOptions(self, spec):
        return _FormatOptions()


class _FormatOptions:
    def GetUnitTypeId(self):
        return UnitTypeId.Millimeters
