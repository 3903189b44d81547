expect_census({"Building Storey": 2, "Wall": 4})
expect(len(members(one("Level 1"), "Wall")) == 4, "Level 1 lost walls")
expect(not members(one("Level 2"), "Wall"), "Level 2 still holds walls")
