# Lays the vertical lines out every 1600 mm (the facade's length over 11 bays, rounded), not every 1500 mm.
from Autodesk.Revit.DB import *
ft = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
l1 = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
for w in [w for w in FilteredElementCollector(doc).OfClass(Wall) if w.LevelId == l1.Id and abs(w.Location.Curve.GetEndPoint(0).Y) < 1e-6]:
    doc.Delete(w.Id)
cwt = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == "Curtain Wall 1"][0]
cw = Wall.Create(doc, Line.CreateBound(XYZ(0, 0, 0), XYZ(ft(18000), 0, 0)), cwt.Id, l1.Id, ft(8000), 0.0, False, False)
mt = FilteredElementCollector(doc).OfClass(MullionType).FirstElement()
for g in [cw.CurtainGrid.AddGridLine(False, XYZ(ft(x), 0, 0), False) for x in range(1600, 18000, 1600)] + \
         [cw.CurtainGrid.AddGridLine(True, XYZ(0, 0, ft(4000)), False)]:
    g.AddMullions(g.FullCurve, mt, False)
