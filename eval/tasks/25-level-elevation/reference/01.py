for o in doc.Objects:
    if getattr(o, "IfcType", "") == "Building Storey" and o.Label == "Level 2":
        print("Level 2 elevation: %.0f mm" % o.Placement.Base.z)
