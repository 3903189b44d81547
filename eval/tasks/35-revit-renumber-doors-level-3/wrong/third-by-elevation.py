# Takes the third level by elevation, which is the mezzanine.
from Autodesk.Revit.DB import *
level = sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)[2]
doors = [d for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType()
         if d.LevelId == level.Id]
for i, d in enumerate(sorted(doors, key=lambda d: d.Location.Point.X)):
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set(str(301 + i))
