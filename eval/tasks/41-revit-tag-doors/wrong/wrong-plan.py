# Puts the tags in the first floor plan the collector answers, whatever its level.
from Autodesk.Revit.DB import *
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
plan = sorted(FilteredElementCollector(doc).OfClass(ViewPlan), key=lambda v: -v.Id.Value)[0]
for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType():
    if d.LevelId == l1.Id:
        IndependentTag.Create(doc, plan.Id, Reference(d), False, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, d.Location.Point)
