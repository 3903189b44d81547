expect_census({"walls": 4, "levels": 2})
l2 = level_named("Level 2")
want = {frozenset([(0, 0), (6000, 0)]), frozenset([(6000, 0), (6000, 4000)]), frozenset([(6000, 4000), (0, 4000)]), frozenset([(0, 4000), (0, 0)])}
got = set()
for w in walls():
    expect(w.LevelId == l2.Id, "wall #%s is on %s, not Level 2" % (w.Id.Value, doc.GetElement(w.LevelId).Name))
    expect(doc.GetElement(w.GetTypeId()).Name == "Generic - 200mm", "wall #%s is a %s" % (w.Id.Value, doc.GetElement(w.GetTypeId()).Name))
    h = mm(w.get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM).AsDouble())
    expect(abs(h - 3000) < 1, "wall #%s is %.0f mm high, want 3000" % (w.Id.Value, h))
    got.add(frozenset(ends_mm(w)))
expect(got == want, "the walls run %s, want the sides of 0,0 to 6000,4000" % sorted(sorted(e) for e in got))
