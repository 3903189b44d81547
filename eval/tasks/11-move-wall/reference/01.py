east = doc.getObjectsByLabel("East wall")[0]
line = east.Base
line.Start = line.Start + App.Vector(500, 0, 0)
line.End = line.End + App.Vector(500, 0, 0)
