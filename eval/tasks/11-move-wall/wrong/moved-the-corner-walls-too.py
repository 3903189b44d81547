for label in ("East wall", "North wall"):
    line = doc.getObjectsByLabel(label)[0].Base
    line.Start = line.Start + App.Vector(500, 0, 0)
    line.End = line.End + App.Vector(500, 0, 0)
