from Autodesk.Revit.DB import *
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 3"][0]
doors = [d for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType()
         if d.LevelId == level.Id]
for i, d in enumerate(sorted(doors, key=lambda d: (d.Location.Point.X, d.Location.Point.Y))):
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set(str(301 + i))
print("renumbered %d doors on Level 3" % len(doors))
