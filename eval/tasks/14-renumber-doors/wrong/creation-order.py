level = doc.getObjectsByLabel("Level 1")[0]
doors = [o for o in level.Group if getattr(o, "IfcType", "") == "Door"]
for i, d in enumerate(doors):  # the order they were made in, not west to east
    d.Label = "D%d" % (101 + i)
