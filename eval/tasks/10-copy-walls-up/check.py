expect_census({"Building Storey": 2, "Wall": 8})
l1, l2 = one("Level 1", "Building Storey"), one("Level 2", "Building Storey")
lower, upper = members(l1, "Wall"), members(l2, "Wall")
expect(len(lower) == 4 and len(upper) == 4, "Level 1 holds %d walls and Level 2 %d, want 4 and 4" % (len(lower), len(upper)))
for w in lower:
    b = box(w)
    match = [u for u in upper if all(near(x, y, 2) for x, y in zip((box(u).XMin, box(u).YMin, box(u).ZMin, box(u).XMax, box(u).YMax, box(u).ZMax),
                                                                  (b.XMin, b.YMin, b.ZMin + 3000, b.XMax, b.YMax, b.ZMax + 3000)))]
    expect(len(match) == 1, "no wall on Level 2 stands 3000 mm above %s" % w.Label)
    expect_box(w, b.XMin, b.YMin, 0, b.XMax, b.YMax, 3000)
