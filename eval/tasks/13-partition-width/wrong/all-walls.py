for w in doc.Objects:
    if getattr(w, "IfcType", "") == "Wall":
        w.Width = 100
