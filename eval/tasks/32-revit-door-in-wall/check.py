expect_census({"walls": 2, "doors": 1, "levels": 2})
l1 = level_named("Level 1")
wall = [w for w in walls() if w.LevelId == l1.Id]
expect(len(wall) == 1 and ends_mm(wall[0]) == [(0, 0), (6000, 0)], "the Level 1 wall moved or went: %s" % [ends_mm(w) for w in walls()])
d = doors()[0]
expect(d.Host is not None and d.Host.Id == wall[0].Id, "the door is not hosted in the Level 1 wall (host %s)" % (d.Host and d.Host.Id.Value))
t = doc.GetElement(d.GetTypeId())
expect((t.FamilyName, t.Name) == ("Single-Flush", "0915 x 2134mm"), "the door is a %s: %s" % (t.FamilyName, t.Name))
p = d.Location.Point
expect(abs(mm(p.X) - 3000) < 1 and abs(mm(p.Y)) < 1, "the door is at %.0f, %.0f mm, want the midpoint 3000, 0" % (mm(p.X), mm(p.Y)))
expect(d.LevelId == l1.Id, "the door is on %s" % doc.GetElement(d.LevelId).Name)
