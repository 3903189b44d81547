from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Architecture import Room
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
# Try the middle of every bay between the walls; keep a room only where the
# region is enclosed (a room that is not enclosed has no area).
made = []
for x in (2000, 6000, 10000, 16000):
    r = doc.Create.NewRoom(l1, UV(ft(x), ft(2500)))
    if r.Area > 0:
        made.append(r)
    else:
        doc.Delete(r.Id)
for i, r in enumerate(sorted(made, key=lambda r: r.Location.Point.X)):
    r.Number = str(101 + i)
    r.get_Parameter(BuiltInParameter.ROOM_NAME).Set("Office")
print("rooms: %s" % [(r.Number, round(UnitUtils.ConvertFromInternalUnits(r.Area, UnitTypeId.SquareMeters), 2)) for r in made])
