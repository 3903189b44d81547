for w in doc.Objects:
    if getattr(w, "IfcType", "") == "Wall":
        w.Height = 3200
