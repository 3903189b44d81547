make_wall("Facade", (0, 0, 0), (10000, 0, 0), width=200, height=3000)
