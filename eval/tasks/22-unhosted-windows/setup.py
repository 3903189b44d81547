a = make_wall("Wall A", (0, 0, 0), (8000, 0, 0))
for i in range(4):
    make_opening("W%d" % (i + 1), a, 500 + 2000 * i, 1000, 1200, sill=900, hosted=i in (0, 2))
