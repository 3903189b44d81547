make_room(make_level("Level 1"), 0, 0, 4000, 3000, height=2700)
make_room(make_level("Level 2", 3200), 0, 0, 4000, 3000, z=3200, height=2700,
          names=("South wall L2", "East wall L2", "North wall L2", "West wall L2"))
