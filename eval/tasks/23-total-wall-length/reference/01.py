walls = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Wall"]
total = sum(w.Length.Value for w in walls)
print("%d walls, total length %.2f m" % (len(walls), total / 1000))
