make_room(make_level("Level 1"), 0, 0, 5000, 4000, height=3000)
make_level("Level 2", 3000)
