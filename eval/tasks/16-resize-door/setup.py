w = make_wall("Hall wall", (0, 0, 0), (6000, 0, 0))
make_opening("D1", w, 500, 900, 2100, door=True)
make_opening("D2", w, 3000, 900, 2100, door=True)
