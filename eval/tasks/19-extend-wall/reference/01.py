wall = doc.getObjectsByLabel("South wall")[0]
line = wall.Base
d = line.End - line.Start
d.normalize()
line.End = line.Start + d * 6000
