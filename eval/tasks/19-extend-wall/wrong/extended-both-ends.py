wall = doc.getObjectsByLabel("South wall")[0]
line = wall.Base
line.Start = line.Start - App.Vector(1000, 0, 0)
line.End = line.End + App.Vector(1000, 0, 0)
