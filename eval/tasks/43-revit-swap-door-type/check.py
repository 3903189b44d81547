expect_census({"walls": 2, "doors": 5, "levels": 2})
got = sorted((doc.GetElement(d.LevelId).Name, round(mm(d.Location.Point.X)), mark(d), d.Symbol.Name) for d in doors())
want = [("Level 1", 2000, "A1", "0915 x 2134mm"), ("Level 1", 6000, "A2", "0915 x 2134mm"), ("Level 1", 8000, "A4", "0915 x 2134mm"),
        ("Level 1", 10000, "A3", "0915 x 2134mm"), ("Level 2", 4000, "B1", "0864 x 2032mm")]
expect(got == want, "doors (level, x mm, Mark, type): %s" % got)
