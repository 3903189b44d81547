l1 = level_named("Level 1")
w = make_wall((0, 0), (9000, 0), l1)
make_door(w, 2000, l1, "D1")
make_door(w, 6000, l1, "D2")
