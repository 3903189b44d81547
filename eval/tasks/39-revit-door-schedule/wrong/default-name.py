# Leaves the schedule under Revit's default name.
from Autodesk.Revit.DB import *
s = ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Doors))
fields = {f.GetName(doc): f for f in s.Definition.GetSchedulableFields()}
for name in ("Mark", "Level", "Type"):
    s.Definition.AddField(fields[name])
