make_room(make_level("Level 1"), 0, 0, 4000, 3000)
