# Makes the sheet without a title block.
from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
sheet = ViewSheet.Create(doc, ElementId.InvalidElementId)
sheet.SheetNumber = "A101"
sheet.Name = "Ground Floor"
plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel is not None and v.GenLevel.Name == "Level 1"][0]
Viewport.Create(doc, sheet.Id, plan.Id, XYZ(ft(420), ft(297), 0))
