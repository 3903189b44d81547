from Autodesk.Revit.DB import *
existing = [p for p in doc.Phases if p.Name == "Existing"][0]
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
walls = [w for w in FilteredElementCollector(doc).OfClass(Wall) if w.LevelId == l1.Id]
for w in walls:
    w.CreatedPhaseId = existing.Id
print("%d walls now Existing" % len(walls))
