doors = [o for o in doc.Objects if getattr(o, "IfcType", "") == "Door"]
for i, d in enumerate(sorted(doors, key=lambda d: (d.Shape.BoundBox.ZMin, d.Shape.BoundBox.XMin))):
    d.Label = "D%d" % (101 + i)
