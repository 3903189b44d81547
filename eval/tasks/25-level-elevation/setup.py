make_level("Level 1", 0)
make_level("Level 2 (draft)", 2800)
make_level("Level 2", 3150)
