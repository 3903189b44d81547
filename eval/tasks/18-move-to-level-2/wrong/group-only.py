wall = doc.getObjectsByLabel("Stray wall")[0]
l1 = doc.getObjectsByLabel("Level 1")[0]
l2 = doc.getObjectsByLabel("Level 2")[0]
l1.Group = [o for o in l1.Group if o != wall]
l2.addObject(wall)  # still standing at z = 0
