# Finds "Level 1" by name among all views and places the 3D view.
from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
tb = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_TitleBlocks) if s.Name == "A1"][0]
sheet = ViewSheet.Create(doc, tb.Id)
sheet.SheetNumber = "A101"
sheet.Name = "Ground Floor"
view = sorted((v for v in FilteredElementCollector(doc).OfClass(View) if v.Name == "Level 1"), key=lambda v: -v.Id.Value)[0]
Viewport.Create(doc, sheet.Id, view.Id, XYZ(ft(420), ft(297), 0))
