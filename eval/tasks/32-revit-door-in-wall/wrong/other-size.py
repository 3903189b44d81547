# Picks the family's other size, 0864 x 2032mm.
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
wall = [w for w in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType() if w.LevelId == level.Id][0]
symbol = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors)
          if s.FamilyName == "Single-Flush" and s.Name == "0864 x 2032mm"][0]
if not symbol.IsActive:
    symbol.Activate()
c = wall.Location.Curve
mid = (c.GetEndPoint(0) + c.GetEndPoint(1)) / 2
doc.Create.NewFamilyInstance(mid, symbol, wall, level, StructuralType.NonStructural)
