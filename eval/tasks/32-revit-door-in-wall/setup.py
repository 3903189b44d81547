l1 = level_named("Level 1")
make_wall((0, 0), (6000, 0), l1)
make_wall((0, 3000), (6000, 3000), level_named("Level 2"))
