# Numbers the offices from east to west.
from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
for i, x in enumerate((10000, 6000, 2000)):
    r = doc.Create.NewRoom(l1, UV(ft(x), ft(2500)))
    r.Number = str(101 + i)
    r.get_Parameter(BuiltInParameter.ROOM_NAME).Set("Office")
