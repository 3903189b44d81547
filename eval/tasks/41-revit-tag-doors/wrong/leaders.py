# Tags Level 1's doors with leaders.
from Autodesk.Revit.DB import *
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.Name == "Level 1"][0]
for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType():
    if d.LevelId == l1.Id:
        IndependentTag.Create(doc, plan.Id, Reference(d), True, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, d.Location.Point)
