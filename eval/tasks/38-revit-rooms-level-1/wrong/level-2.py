# Places the room on Level 2, whose walls enclose one space.
from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
l2 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 2"][0]
r = doc.Create.NewRoom(l2, UV(ft(6000), ft(2500)))
r.Number = "101"
r.get_Parameter(BuiltInParameter.ROOM_NAME).Set("Office")
