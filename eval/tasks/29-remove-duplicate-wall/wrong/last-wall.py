# Assumes the duplicate is the last wall listed... of the wrong kind of list.
walls = sorted((o for o in doc.Objects if getattr(o, "IfcType", "") == "Wall"), key=lambda o: o.Label)
doc.removeObject(walls[-1].Name)
