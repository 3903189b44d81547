lv = make_level("Level 1")
make_wall("Old wall", (0, 0, 0), (5000, 0, 0), width=150, height=2900, level=lv)
make_wall("Back wall", (0, 4000, 0), (5000, 4000, 0), width=200, height=2900, level=lv)
