# Renumbers every door in the building.
from Autodesk.Revit.DB import *
doors = list(FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType())
for i, d in enumerate(sorted(doors, key=lambda d: d.Location.Point.X)):
    d.get_Parameter(BuiltInParameter.ALL_MODEL_MARK).Set(str(301 + i))
