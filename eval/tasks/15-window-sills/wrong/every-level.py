for w in doc.Objects:
    if getattr(w, "IfcType", "") == "Window":
        p = w.Base.Placement
        p.Base.z += 900 - w.Shape.BoundBox.ZMin  # ignores the level's elevation
        w.Base.Placement = p
