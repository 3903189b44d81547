lv = make_level("Level 1")
make_room(lv, 0, 0, 6000, 4000)
make_wall("Partition", (3000, 0, 0), (3000, 4000, 0), width=200, height=2700, level=lv)
