# Takes the walls at z >= 0 for the upper level: every wall.
for w in [o for o in doc.Objects if getattr(o, "IfcType", "") == "Wall" and o.Shape.BoundBox.ZMin >= 0]:
    doc.removeObject(w.Name)
