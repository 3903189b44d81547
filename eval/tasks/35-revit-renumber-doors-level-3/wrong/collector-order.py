# Numbers Level 3's doors in the order the collector answers them.
from Autodesk.Revit.DB import *
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 3"][0]
doors = [d for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType()
         if d.LevelId == level.Id]
for i, d in enumerate(doors):
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set(str(301 + i))
