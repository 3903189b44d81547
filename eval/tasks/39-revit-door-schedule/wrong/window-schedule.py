# Schedules the windows.
from Autodesk.Revit.DB import *
s = ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Windows))
s.Name = "Door Schedule - Marks"
fields = {f.GetName(doc): f for f in s.Definition.GetSchedulableFields()}
for name in ("Mark", "Level", "Type"):
    s.Definition.AddField(fields[name])
