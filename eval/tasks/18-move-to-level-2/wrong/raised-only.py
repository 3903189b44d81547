line = doc.getObjectsByLabel("Stray wall")[0].Base
line.Start = line.Start + App.Vector(0, 0, 3000)
line.End = line.End + App.Vector(0, 0, 3000)
