import Arch, Draft

l1 = doc.getObjectsByLabel("Level 1")[0]
l2 = doc.getObjectsByLabel("Level 2")[0]
for w in [o for o in l1.Group if getattr(o, "IfcType", "") == "Wall"]:
    # Forgets that a level's members are placed absolutely.
    copy = Arch.makeWall(Draft.makeLine(w.Base.Start, w.Base.End), width=w.Width.Value, height=w.Height.Value, align=w.Align)
    l2.addObject(copy)
