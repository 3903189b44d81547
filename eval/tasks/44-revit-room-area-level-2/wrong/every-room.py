# Adds up every room, Level 1's too.
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Architecture import Room
total = sum(r.Area for r in FilteredElementCollector(doc).OfClass(Room))
print("rooms: %.2f" % UnitUtils.ConvertFromInternalUnits(total, UnitTypeId.SquareMeters))
