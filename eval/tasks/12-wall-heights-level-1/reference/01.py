level = doc.getObjectsByLabel("Level 1")[0]
for w in level.Group:
    if getattr(w, "IfcType", "") == "Wall":
        w.Height = 3200
