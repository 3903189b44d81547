hall = make_wall("Hall wall", (0, 0, 0), (6000, 0, 0), width=200, height=3000)
make_opening("D1", hall, 800, 900, 2100, door=True)
