import Arch, Draft

old = doc.getObjectsByLabel("Old wall")[0]
level = doc.getObjectsByLabel("Level 1")[0]
level.addObject(Arch.makeWall(Draft.makeLine(old.Base.Start, old.Base.End), width=200, height=old.Height.Value, align="Center"))
