# Flags every instance without a host, desks included.
from Autodesk.Revit.DB import *
lost = [i for i in FilteredElementCollector(doc).OfClass(FamilyInstance) if i.Host is None]
for i in lost:
    i.get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).Set("UNHOSTED")
print("unhosted: %d" % len(lost))
