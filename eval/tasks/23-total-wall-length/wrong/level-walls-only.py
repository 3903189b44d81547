level = doc.getObjectsByLabel("Level 1")[0]
walls = [o for o in level.Group if getattr(o, "IfcType", "") == "Wall"]
print("%d walls, total length %.2f m" % (len(walls), sum(w.Length.Value for w in walls) / 1000))
