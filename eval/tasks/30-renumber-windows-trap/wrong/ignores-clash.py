facade = doc.getObjectsByLabel("Facade")[0]
mine = sorted((o for o in doc.Objects if getattr(o, "IfcType", "") == "Window" and facade in o.Hosts), key=lambda w: w.Shape.BoundBox.XMin)
for i, w in enumerate(mine):
    w.Label = "W%d" % (i + 1)  # FreeCAD makes the clashing one "W001" or similar
