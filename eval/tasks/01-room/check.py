expect_census({"Building Storey": 1, "Wall": 4})
lv = one("Level 1", "Building Storey")
walls = members(lv, "Wall")
expect(len(walls) == 4, "Level 1 holds %d walls, want 4" % len(walls))
edges = [((0, 0, 0), (4000, 0, 0)), ((4000, 0, 0), (4000, 3000, 0)), ((4000, 3000, 0), (0, 3000, 0)), ((0, 3000, 0), (0, 0, 0))]
for a, b in edges:
    expect(any(same_axis(w, a, b) for w in walls), "no wall runs from %s to %s" % (a, b))
for w in walls:
    expect_near(mm(w.Width), 200, w.Label + " width")
    expect_near(mm(w.Height), 2700, w.Label + " height")
