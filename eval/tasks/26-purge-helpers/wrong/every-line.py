for o in [o for o in doc.Objects if not getattr(o, "IfcType", "")]:
    doc.removeObject(o.Name)  # the walls' own base lines too
