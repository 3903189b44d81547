"""doc.Create: Autodesk.Revit.Creation.Document."""
from .walls import StructuralType, new_family_instance
from .elements import Level


class CreationDocument:
    def __init__(self, doc):
        self._doc = doc

    def NewFamilyInstance(self, location, symbol, *rest):
        """(XYZ, FamilySymbol, StructuralType), (XYZ, FamilySymbol, Level,
        StructuralType), (XYZ, FamilySymbol, Element host, StructuralType) and
        (XYZ, FamilySymbol, Element host, Level, StructuralType)."""
        if len(rest) == 1:
            return new_family_instance(self._doc, location, symbol, None, None, rest[0])
        if len(rest) == 2:
            a, st = rest
            if isinstance(a, Level):
                return new_family_instance(self._doc, location, symbol, None, a, st)
            return new_family_instance(self._doc, location, symbol, a, None, st)
        if len(rest) == 3:
            host, level, st = rest
            return new_family_instance(self._doc, location, symbol, host, level, st)
        raise TypeError("NewFamilyInstance: the double models the (XYZ, FamilySymbol, [host], [Level], StructuralType) "
                        "overloads; got %d arguments" % (len(rest) + 2))


__all__ = ["CreationDocument", "StructuralType"]
