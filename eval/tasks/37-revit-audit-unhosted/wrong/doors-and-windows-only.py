# Looks only at doors and windows, which a deleted wall takes with it.
from Autodesk.Revit.DB import *
lost = [i for bic in (BuiltInCategory.OST_Doors, BuiltInCategory.OST_Windows)
        for i in FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType() if i.Host is None]
for i in lost:
    i.get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).Set("UNHOSTED")
print("unhosted: %d" % len(lost))
