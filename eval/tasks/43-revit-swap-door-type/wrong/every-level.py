# Changes the type on every level.
from Autodesk.Revit.DB import *
big = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors) if s.Name == "0915 x 2134mm"][0]
for d in FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType():
    if d.Symbol.Name == "0864 x 2032mm":
        d.ChangeTypeId(big.Id)
