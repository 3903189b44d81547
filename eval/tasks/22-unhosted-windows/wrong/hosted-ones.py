print("Windows that cut no wall:", ", ".join(sorted(o.Label for o in doc.Objects if getattr(o, "IfcType", "") == "Window" and o.Hosts)))
