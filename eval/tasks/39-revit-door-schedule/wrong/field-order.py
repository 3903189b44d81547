# Adds Type first, then the rest in the order the schedule offers them.
from Autodesk.Revit.DB import *
s = ViewSchedule.CreateSchedule(doc, ElementId(BuiltInCategory.OST_Doors))
s.Name = "Door Schedule - Marks"
fields = list(s.Definition.GetSchedulableFields())
for f in sorted(fields, key=lambda f: f.GetName(doc) != "Type"):
    if f.GetName(doc) in ("Mark", "Level", "Type"):
        s.Definition.AddField(f)
