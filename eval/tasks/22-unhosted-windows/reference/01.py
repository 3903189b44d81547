loose = [o.Label for o in doc.Objects if getattr(o, "IfcType", "") == "Window" and not o.Hosts]
print("Windows that cut no wall:", ", ".join(sorted(loose)) or "none")
