expect_census({"Wall": 1, "Door": 2})
hall = one("Hall wall", "Wall")
d1, d2 = one("D1", "Door"), one("D2", "Door")
expect_box(d1, 800, -100, 0, 1700, 100, 2100, 5)
for d in (d1, d2):
    expect(hosts(d) == [hall], "%s is not hosted by the Hall wall" % d.Label)
expect_near(box(d2).XMin, 3000, "D2's left edge (x)", 5)
expect_near(mm(d2.Width), 900, "D2 width")
expect_near(mm(d2.Height), 2100, "D2 height")
