l1, l2 = make_level("Level 1"), make_level("Level 2", 3000)
w1 = make_wall("Corridor", (0, 0, 0), (9000, 0, 0), level=l1)
w2 = make_wall("Corridor L2", (0, 0, 3000), (9000, 0, 3000), level=l2)
for label, x in (("D7", 6000), ("D2", 1000), ("D9", 3500)):
    make_opening(label, w1, x, 900, 2100, door=True, level=l1)
make_opening("D1", w2, 1000, 900, 2100, door=True, level=l2)
