expect_census({"walls": 13, "levels": 2})
l1 = level_named("Level 1")
rs = sorted(rooms(), key=lambda r: r.Location.Point.X)
expect(all(r.LevelId == l1.Id for r in rs), "rooms on %s" % sorted({doc.GetElement(r.LevelId).Name for r in rs}))
got = [(r.Number, r.get_Parameter(BuiltInParameter.ROOM_NAME).AsString(), round(sqm(r.Area), 2)) for r in rs]
want = [("101", "Office", 18.24), ("102", "Office", 18.24), ("103", "Office", 18.24)]
expect(got == want, "rooms west to east (number, name, m2): %s, want %s" % (got, want))
