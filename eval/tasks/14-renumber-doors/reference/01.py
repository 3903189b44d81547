level = doc.getObjectsByLabel("Level 1")[0]
doors = [o for o in level.Group if getattr(o, "IfcType", "") == "Door"]
for i, d in enumerate(sorted(doors, key=lambda d: d.Shape.BoundBox.XMin)):
    d.Label = "D%d" % (101 + i)
    print(d.Name, "->", d.Label)
