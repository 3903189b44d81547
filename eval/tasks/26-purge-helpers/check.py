expect_census({"Building Storey": 1, "Wall": 4})
left = [o.Label for o in doc.Objects if not kind(o) and not o.InList]
expect(not left, "helpers nothing uses are still there: %s" % ", ".join(sorted(left)))
for w in of_kind("Wall"):
    expect(w.Base is not None, "%s lost the line it is built on" % w.Label)
    expect_near(box(w).ZLength, 2700, w.Label + " height as built")
expect(same_axis(one("South wall"), (0, 0, 0), (4000, 0, 0)), "the South wall changed")
