from Autodesk.Revit.DB import *
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel is not None and v.GenLevel.Id == l1.Id][0]
doors = [d for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType() if d.LevelId == l1.Id]
for d in doors:
    IndependentTag.Create(doc, plan.Id, Reference(d), False, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, d.Location.Point)
print("tagged %d doors in %s" % (len(doors), plan.Name))
