from Autodesk.Revit.DB import *
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
big = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors) if s.Name == "0915 x 2134mm"][0]
changed = 0
for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType():
    if d.LevelId == l1.Id and d.Symbol.Name == "0864 x 2032mm":
        d.ChangeTypeId(big.Id)
        changed += 1
print("changed %d doors" % changed)
