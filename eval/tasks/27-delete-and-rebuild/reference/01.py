import Arch, Draft

old = doc.getObjectsByLabel("Old wall")[0]
level = [p for p in old.InList if getattr(p, "IfcType", "") == "Building Storey"][0]
start, end, height = old.Base.Start, old.Base.End, old.Height.Value
base = old.Base
doc.removeObject(old.Name)
doc.removeObject(base.Name)
wall = Arch.makeWall(Draft.makeLine(start, end), width=200, height=height, align="Center")
wall.Label = "Wall"
level.addObject(wall)
