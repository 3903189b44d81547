expect_census({"Building Storey": 2, "Wall": 2, "Window": 4})
for label, x in (("W1", 1000), ("W2", 4000), ("W3", 7000)):
    w = one(label, "Window")
    expect_near(sill(w), 900, label + " sill", 2)
    expect_near(box(w).XMin, x, label + " position along the wall (x)", 2)
    expect_near(mm(w.Height), 1200, label + " height")
    expect(hosts(w) == [one("Facade")], label + " is no longer hosted by the Facade")
expect_near(sill(one("W4")), 600, "W4 sill (Level 2: must not change)", 2)
