# Deletes each door and places a new one of the other type where it was (the Mark is lost).
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
big = [s for s in FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors) if s.Name == "0915 x 2134mm"][0]
for d in list(FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Doors).WhereElementIsNotElementType()):
    if d.LevelId == l1.Id and d.Symbol.Name == "0864 x 2032mm":
        p, host = d.Location.Point, d.Host
        doc.Delete(d.Id)
        doc.Create.NewFamilyInstance(p, big, host, l1, StructuralType.NonStructural)
