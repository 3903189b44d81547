"""doc.Create: Autodesk.Revit.Creation.Document."""
from .elements import Level
from .sketch import new_model_curve, new_reference_plane
from .hosting import Reference, new_face_based_instance
from .walls import new_family_instance


class CreationDocument:
    def __init__(self, doc):
        self._doc = doc

    def NewFamilyInstance(self, location, symbol, *rest):
        """(XYZ, FamilySymbol, StructuralType), (XYZ, FamilySymbol, Level,
        StructuralType), (XYZ, FamilySymbol, Element host, StructuralType) and
        (XYZ, FamilySymbol, Element host, Level, StructuralType), and the
        face-based (Reference face, XYZ, XYZ referenceDirection, FamilySymbol)."""
        if len(rest) == 1:
            return new_family_instance(self._doc, location, symbol, None, None, rest[0])
        if len(rest) == 2 and isinstance(location, Reference):
            return new_face_based_instance(self._doc, location, symbol, rest[0], rest[1])
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

    def NewRoom(self, level, point):
        """NewRoom(Level, UV) (rooms.py)."""
        from .rooms import new_room
        return new_room(self._doc, level, point)

    def NewModelCurve(self, curve, sketch_plane):
        return new_model_curve(self._doc, curve, sketch_plane)

    def NewReferencePlane(self, bubble_end, free_end, cut_vec, view):
        return new_reference_plane(self._doc, bubble_end, free_end, cut_vec, view)
