level = doc.getObjectsByLabel("Level 1")[0]
for w in level.Group:
    if getattr(w, "IfcType", "") == "Window":
        p = w.Base.Placement
        p.Base.z += 900  # raises each by 900 instead of setting it to 900
        w.Base.Placement = p
