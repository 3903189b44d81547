expect_census({"Building Storey": 1, "Wall": 2})
expect(not doc.getObjectsByLabel("Old wall"), "the Old wall is still there")
lv = one("Level 1")
new = [w for w in members(lv, "Wall") if same_axis(w, (0, 0, 0), (5000, 0, 0))]
expect(len(new) == 1, "%d walls on Level 1 lie on the old axis, want 1" % len(new))
expect_near(mm(new[0].Width), 200, "the new wall's width")
expect_near(mm(new[0].Height), 2900, "the new wall's height")
expect_centred(new[0])
