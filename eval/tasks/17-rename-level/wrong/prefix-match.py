level = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Building Storey" and o.Label.startswith("Level 1")][0]
level.Label = "Ground Floor"
