"""The .NET System namespace as pythonnet gives it to a script in Revit,
cut down to what Revit scripts use with the API: the generic collections
(System.Collections.Generic.List[ElementId] and the like) and Enum."""
import enum as _enum


class Enum:
    """System.Enum's static helpers over the double's enums."""

    @staticmethod
    def GetNames(enum_type):
        return list(enum_type.__members__)

    @staticmethod
    def GetValues(enum_type):
        return list(enum_type)

    @staticmethod
    def IsDefined(enum_type, value):
        if isinstance(value, str):
            return value in enum_type.__members__
        return any(int(m) == int(value) for m in enum_type)


__all__ = ["Enum"]
_ = _enum
