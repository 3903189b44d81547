make_wall("South wall", (0, 0, 0), (4000, 0, 0), height=2700)
make_wall("Garden wall", (0, -3000, 0), (4000, -3000, 0), height=1200)
