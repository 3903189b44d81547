expect_census({"Building Storey": 1, "Wall": 5})
p = one("Partition", "Wall")
expect_near(mm(p.Width), 100, "Partition width")
expect_centred(p)
expect(same_axis(p, (3000, 0, 0), (3000, 4000, 0)), "the Partition moved")
for label in ("South wall", "East wall", "North wall", "West wall"):
    expect_near(mm(one(label).Width), 200, label + " width (must not change)")
