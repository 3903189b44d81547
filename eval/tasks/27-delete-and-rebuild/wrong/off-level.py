import Arch, Draft

old = doc.getObjectsByLabel("Old wall")[0]
start, end, height = old.Base.Start, old.Base.End, old.Height.Value
doc.removeObject(old.Name)
Arch.makeWall(Draft.makeLine(start, end), width=200, height=height, align="Center")
