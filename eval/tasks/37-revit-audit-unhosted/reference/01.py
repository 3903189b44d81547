from Autodesk.Revit.DB import *
# A family that needs a host: anything but a level-based one (furniture and
# the like have no host by design).
lost = [i for i in FilteredElementCollector(doc).OfClass(FamilyInstance)
        if i.Host is None and i.Symbol.Family.FamilyPlacementType != FamilyPlacementType.OneLevelBased]
for i in lost:
    i.get_Parameter(BuiltInParameter.ALL_MODEL_INSTANCE_COMMENTS).Set("UNHOSTED")
for i in lost:
    print("#%s %s: no host" % (i.Id, i.Symbol.Family.Name))
print("unhosted family instances: %d" % len(lost))
