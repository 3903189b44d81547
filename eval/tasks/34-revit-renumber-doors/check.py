expect_census({"walls": 2, "doors": 5, "levels": 2})
l1, l2 = level_named("Level 1"), level_named("Level 2")
on = lambda level: sorted((d for d in doors() if d.LevelId == level.Id), key=lambda d: d.Location.Point.X)
got1 = [(round(mm(d.Location.Point.X)), mark(d)) for d in on(l1)]
expect(got1 == [(1500, "D101"), (5000, "D102"), (9000, "D103")], "Level 1's doors west to east (x mm, Mark): %s" % got1)
got2 = [(round(mm(d.Location.Point.X)), mark(d)) for d in on(l2)]
expect(got2 == [(2000, "D201"), (8000, "D202")], "Level 2's doors changed: %s" % got2)
