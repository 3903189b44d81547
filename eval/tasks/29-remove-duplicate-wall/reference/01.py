walls = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Wall"]
seen = {}
for w in walls:
    b = w.Shape.BoundBox
    key = tuple(round(v) for v in (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax))
    if key in seen:
        print("removing", w.Label, "(a copy of %s)" % seen[key].Label)
        doc.removeObject(w.Name)
    else:
        seen[key] = w
