make_room(make_level("Level 1"), 0, 0, 4000, 3000)
make_room(make_level("Level 2", 3000), 0, 0, 4000, 3000, z=3000, names=("S2", "E2", "N2", "W2"))
