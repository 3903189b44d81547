import Arch, Draft

l1 = doc.getObjectsByLabel("Level 1")[0]
for w in [o for o in l1.Group if getattr(o, "IfcType", "") == "Wall"]:
    line = Draft.makeLine(w.Base.Start + App.Vector(0, 0, 3000), w.Base.End + App.Vector(0, 0, 3000))
    l1.addObject(Arch.makeWall(line, width=w.Width.Value, height=w.Height.Value, align=w.Align))
