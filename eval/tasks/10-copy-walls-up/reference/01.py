import Arch, Draft

l1 = doc.getObjectsByLabel("Level 1")[0]
l2 = doc.getObjectsByLabel("Level 2")[0]
dz = l2.Placement.Base.z - l1.Placement.Base.z
for w in [o for o in l1.Group if getattr(o, "IfcType", "") == "Wall"]:
    a, b = w.Base.Start, w.Base.End
    line = Draft.makeLine(a + App.Vector(0, 0, dz), b + App.Vector(0, 0, dz))
    copy = Arch.makeWall(line, width=w.Width.Value, height=w.Height.Value, align=w.Align)
    copy.Label = w.Label + " (Level 2)"
    l2.addObject(copy)
