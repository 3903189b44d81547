# Sets everything on Level 1 to Existing, the new door included.
from Autodesk.Revit.DB import *
existing = [p for p in doc.Phases if p.Name == "Existing"][0]
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
for bic in (BuiltInCategory.OST_Walls, BuiltInCategory.OST_Doors):
    for e in FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType():
        if e.LevelId == l1.Id:
            e.CreatedPhaseId = existing.Id
