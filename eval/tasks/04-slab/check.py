expect_census({"Slab": 1})
expect_box(of_kind("Slab")[0], 0, 0, -200, 6000, 4000, 0)
