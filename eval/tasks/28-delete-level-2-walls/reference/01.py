level = doc.getObjectsByLabel("Level 2")[0]
for w in [o for o in level.Group if getattr(o, "IfcType", "") == "Wall"]:
    base = w.Base
    doc.removeObject(w.Name)
    if base is not None and not base.InList:
        doc.removeObject(base.Name)
