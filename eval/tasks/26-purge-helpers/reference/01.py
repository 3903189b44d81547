# A helper is an object that is no building element and that nothing uses.
unused = [o for o in doc.Objects if not getattr(o, "IfcType", "") and not o.InList]
for o in unused:
    print("removing", o.Label)
    doc.removeObject(o.Name)
