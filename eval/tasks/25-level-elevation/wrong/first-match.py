lv = [o for o in doc.Objects if "Level 2" in o.Label][0]
print("Level 2 elevation: %.0f mm" % lv.Placement.Base.z)
