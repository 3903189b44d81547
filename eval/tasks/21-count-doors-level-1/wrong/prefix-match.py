levels = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Building Storey" and o.Label.startswith("Level 1")]
print("Doors on Level 1:", sum(1 for lv in levels for o in lv.Group if getattr(o, "IfcType", "") == "Door"))
