# Measures the rooms between the walls' location lines.
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Architecture import Room
l2 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 2"][0]
opts = SpatialElementBoundaryOptions()
opts.SpatialElementBoundaryLocation = SpatialElementBoundaryLocation.Center
total = 0.0
for r in FilteredElementCollector(doc).OfClass(Room):
    if r.LevelId != l2.Id:
        continue
    pts = [s.GetCurve().GetEndPoint(0) for s in r.GetBoundarySegments(opts)[0]]
    total += abs(sum(a.X * b.Y - b.X * a.Y for a, b in zip(pts, pts[1:] + pts[:1]))) / 2
print("Level 2 rooms: %.2f" % UnitUtils.ConvertFromInternalUnits(total, UnitTypeId.SquareMeters))
