expect_census({"levels": 4, "walls": 0})
got = [(l.Name, round(mm(l.Elevation))) for l in levels()]
expect(got == [("Level 1", 0), ("Level 2", 4000), ("Level 3", 8000), ("Level 4", 12000)], "the levels are %s" % got)
