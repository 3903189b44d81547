l1, l2, l10 = make_level("Level 1"), make_level("Level 2", 3000), make_level("Level 10", 27000)
w1 = make_wall("Corridor", (0, 0, 0), (12000, 0, 0), level=l1)
w2 = make_wall("Corridor L2", (0, 0, 3000), (12000, 0, 3000), level=l2)
w10 = make_wall("Corridor L10", (0, 0, 27000), (12000, 0, 27000), level=l10)
for i in range(3):
    make_opening("D1%02d" % (i + 1), w1, 1000 + 3000 * i, 900, 2100, door=True, level=l1)
for i in range(2):
    make_opening("D2%02d" % (i + 1), w2, 1000 + 3000 * i, 900, 2100, door=True, level=l2)
make_opening("D1001", w10, 1000, 900, 2100, door=True, level=l10)
