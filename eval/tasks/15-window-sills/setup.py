l1, l2 = make_level("Level 1"), make_level("Level 2", 3000)
w1 = make_wall("Facade", (0, 0, 0), (9000, 0, 0), level=l1)
w2 = make_wall("Facade L2", (0, 0, 3000), (9000, 0, 3000), level=l2)
for label, x, s in (("W1", 1000, 600), ("W2", 4000, 1000), ("W3", 7000, 750)):
    make_opening(label, w1, x, 1000, 1200, sill=s, level=l1)
make_opening("W4", w2, 4000, 1000, 1200, sill=600, level=l2)
