walls = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Wall"]
top = max(walls, key=lambda w: w.Length.Value)
print("Tallest: %s, %.0f mm high" % (top.Label, top.Height.Value))
