for o in [o for o in doc.Objects if o.Label.startswith("Construction line")]:
    doc.removeObject(o.Name)
