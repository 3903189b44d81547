# Numbers every door in the project, Level 2 too.
from Autodesk.Revit.DB import *
doors = list(FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType())
for i, d in enumerate(sorted(doors, key=lambda d: d.Location.Point.X)):
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set("D%d" % (101 + i))
