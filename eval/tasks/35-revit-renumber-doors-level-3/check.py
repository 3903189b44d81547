expect_census({"walls": 6, "doors": 9, "levels": 4})
l3 = level_named("Level 3")
on3 = sorted((d for d in doors() if d.LevelId == l3.Id), key=lambda d: d.Location.Point.X)
got = [(round(mm(d.Location.Point.X)), mark(d)) for d in on3]
expect(got == [(2000, "301"), (8000, "302"), (11000, "303"), (15000, "304")], "Level 3's doors west to east (x mm, Mark): %s" % got)
others = sorted((doc.GetElement(d.LevelId).Name, round(mm(d.Location.Point.X)), mark(d)) for d in doors() if d.LevelId != l3.Id)
want = [("Level 1", 3000, "D-a"), ("Level 1", 9000, "D-b"), ("Level 2", 4000, "D-c"), ("Level 2", 12000, "D-d"), ("Mezzanine", 6000, "M1")]
expect(others == want, "the other levels' doors changed: %s" % others)
