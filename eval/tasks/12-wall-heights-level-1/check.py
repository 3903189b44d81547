expect_census({"Building Storey": 2, "Wall": 8})
for w in members(one("Level 1"), "Wall"):
    expect_near(mm(w.Height), 3200, w.Label + " height")
for w in members(one("Level 2"), "Wall"):
    expect_near(mm(w.Height), 2700, w.Label + " height (Level 2 must not change)")
