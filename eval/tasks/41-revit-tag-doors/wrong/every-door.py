# Tags every door of the building in the Level 1 plan.
from Autodesk.Revit.DB import *
plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.Name == "Level 1"][0]
for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType():
    IndependentTag.Create(doc, plan.Id, Reference(d), False, TagMode.TM_ADDBY_CATEGORY, TagOrientation.Horizontal, d.Location.Point)
