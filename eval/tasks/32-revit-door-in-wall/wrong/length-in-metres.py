# Reads the wall's Length, in feet, as metres and converts it: the door lands about 900 mm from the start.
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
wall = [w for w in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType() if w.LevelId == level.Id][0]
symbol = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors)
          if s.FamilyName == "Single-Flush" and s.Name == "0915 x 2134mm"][0]
if not symbol.IsActive:
    symbol.Activate()
c = wall.Location.Curve
mid = XYZ(c.Length / 2 * 304.8 / 1000, 0, 0)
doc.Create.NewFamilyInstance(mid, symbol, wall, level, StructuralType.NonStructural)
