make_level("Level 1 (old)", -50)
make_level("Level 1", 0)
make_level("Level 2", 3000)
