level = doc.getObjectsByLabel("Level 2")[0]
for w in [o for o in level.Group if getattr(o, "IfcType", "") == "Wall"]:
    doc.removeObject(w.Name)
doc.removeObject(level.Name)
