from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Architecture import Room
l2 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 2"][0]
total = sum(r.Area for r in FilteredElementCollector(doc).OfClass(Room) if r.LevelId == l2.Id)
print("Level 2 rooms: %.2f" % UnitUtils.ConvertFromInternalUnits(total, UnitTypeId.SquareMeters))
