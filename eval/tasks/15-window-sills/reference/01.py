level = doc.getObjectsByLabel("Level 1")[0]
for w in level.Group:
    if getattr(w, "IfcType", "") != "Window":
        continue
    # A window's body hangs from its base sketch: move the sketch up or down.
    dz = level.Placement.Base.z + 900 - w.Shape.BoundBox.ZMin
    p = w.Base.Placement
    p.Base.z += dz
    w.Base.Placement = p
    print(w.Label, "sill now 900")
