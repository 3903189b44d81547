wall = doc.getObjectsByLabel("Stray wall")[0]
l1 = doc.getObjectsByLabel("Level 1")[0]
l2 = doc.getObjectsByLabel("Level 2")[0]
l1.Group = [o for o in l1.Group if o != wall]
l2.addObject(wall)
dz = l2.Placement.Base.z - l1.Placement.Base.z
line = wall.Base
line.Start = line.Start + App.Vector(0, 0, dz)
line.End = line.End + App.Vector(0, 0, dz)
