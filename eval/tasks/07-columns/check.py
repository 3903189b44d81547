expect_census({"Column": 4})
cols = of_kind("Column")
for x, y in ((0, 0), (6000, 0), (0, 4000), (6000, 4000)):
    at = [c for c in cols if near(box(c).Center.x, x, 2) and near(box(c).Center.y, y, 2)]
    expect(len(at) == 1, "%d columns centred on (%d, %d), want 1" % (len(at), x, y))
    expect_box(at[0], x - 150, y - 150, 0, x + 150, y + 150, 3000)
