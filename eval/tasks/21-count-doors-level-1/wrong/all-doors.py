print("Doors on Level 1:", sum(1 for o in doc.Objects if getattr(o, "IfcType", "") == "Door"))
