wall = doc.getObjectsByLabel("South wall")[0]
line = wall.Base
line.End = line.End + App.Vector(6000, 0, 0)  # by 6000, not to 6000
