# Sets every wall of the project to Existing.
from Autodesk.Revit.DB import *
existing = [p for p in doc.Phases if p.Name == "Existing"][0]
for w in FilteredElementCollector(doc).OfClass(Wall):
    w.CreatedPhaseId = existing.Id
