expect_census({"Building Storey": 2})
expect_near(one("Level 1", "Building Storey").Placement.Base.z, 0, "Level 1 elevation")
expect_near(one("Level 2", "Building Storey").Placement.Base.z, 3000, "Level 2 elevation")
