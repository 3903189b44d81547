f = make_wall("Facade", (0, 0, 0), (9000, 0, 0))
g = make_wall("Garage", (0, 5000, 0), (4000, 5000, 0))
make_opening("W1", g, 1000, 1000, 1200, sill=900)
for label, x in (("Window A", 6000), ("Window B", 1000), ("Window C", 3500)):
    make_opening(label, f, x, 1000, 1200, sill=900)
