lv = make_level("Level 1")
make_room(lv, 0, 0, 5500, 3200)
make_wall("Partition", (2500, 0, 0), (2500, 3200, 0), width=100, level=lv)
make_wall("Garden wall", (0, -2000, 0), (7250, -2000, 0), height=1200)
