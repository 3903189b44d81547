expect_census({"Wall": 4})
walls = of_kind("Wall")
for g in ("Grid A", "Grid B", "Grid C", "Grid D"):
    line = one(g)
    on = [w for w in walls if same_axis(w, tuple(line.Start), tuple(line.End))]
    expect(len(on) == 1, "%d walls lie on %s, want 1" % (len(on), g))
    expect_near(mm(on[0].Width), 200, "width of the wall on " + g)
    expect_near(mm(on[0].Height), 3000, "height of the wall on " + g)
    expect_centred(on[0])
