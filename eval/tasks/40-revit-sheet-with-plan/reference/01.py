from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
tb = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_TitleBlocks) if s.Name == "A1"][0]
sheet = ViewSheet.Create(doc, tb.Id)
sheet.SheetNumber = "A101"
sheet.Name = "Ground Floor"
plan = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if v.GenLevel is not None and v.GenLevel.Name == "Level 1"][0]
Viewport.Create(doc, sheet.Id, plan.Id, XYZ(ft(420), ft(297), 0))
print("sheet %s holds view #%s" % (sheet.SheetNumber, plan.Id))
