lv = make_level("Level 1")
make_room(lv, 0, 0, 4000, 3000)
make_wall("East wall copy", (4000, 0, 0), (4000, 3000, 0), height=2700, level=lv)
