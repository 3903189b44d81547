l1, l2 = level_named("Level 1"), level_named("Level 2")
w1 = make_wall((0, 0), (12000, 0), l1)
for x, m in ((9000, "7"), (1500, "3"), (5000, "12")):
    make_door(w1, x, l1, m)
w2 = make_wall((0, 5000), (12000, 5000), l2)
for x, m in ((2000, "D201"), (8000, "D202")):
    make_door(w2, x, l2, m)
