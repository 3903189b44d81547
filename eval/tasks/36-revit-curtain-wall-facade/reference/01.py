from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
old = [w for w in FilteredElementCollector(doc).OfClass(Wall) if w.LevelId == l1.Id
       and abs(w.Location.Curve.GetEndPoint(0).Y) < 1e-6 and abs(w.Location.Curve.GetEndPoint(1).Y) < 1e-6]
for w in old:
    doc.Delete(w.Id)
cwt = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == "Curtain Wall 1"][0]
cw = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(ft(18000), 0, 0)), cwt.Id, l1.Id, ft(8000), 0.0, False, False)
grid = cw.CurtainGrid
lines = [grid.AddGridLine(False, XYZ(ft(x), 0, 0), False) for x in range(1500, 18000, 1500)]
lines.append(grid.AddGridLine(True, XYZ(0, 0, l1.Elevation + ft(4000)), False))
mt = [m for m in FilteredElementCollector(doc).OfClass(MullionType) if m.Name == "50 x 150mm"][0]
for g in lines:
    g.AddMullions(g.FullCurve, mt, False)
print("curtain wall #%s: %d V lines, %d U lines, %d mullions, %d panels"
      % (cw.Id, grid.NumVLines, grid.NumULines, len(grid.GetMullionIds()), grid.NumPanels))
