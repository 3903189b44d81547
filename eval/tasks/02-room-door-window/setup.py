lv = make_level("Level 1")
make_room(lv, 0, 0, 4000, 3000)
