from Autodesk.Revit.DB import *
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 2"][0]
wall_type = [t for t in FilteredElementCollector(doc).OfClass(WallType) if t.Name == "Generic - 200mm"][0]
mm = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
corners = [(0, 0), (6000, 0), (6000, 4000), (0, 4000)]
for i in range(4):
    (x0, y0), (x1, y1) = corners[i], corners[(i + 1) % 4]
    Wall.Create(doc, Line.CreateBound(XYZ(mm(x0), mm(y0), 0), XYZ(mm(x1), mm(y1), 0)), wall_type.Id, level.Id, mm(3000), 0.0, False, False)
