l1 = make_level("Level 1")
make_level("Level 2", 3000)
make_wall("Stray wall", (0, 0, 0), (4000, 0, 0), height=2800, level=l1)
make_wall("Keep wall", (0, 2000, 0), (4000, 2000, 0), height=2800, level=l1)
