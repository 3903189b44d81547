make_wall("Long wall", (0, 0, 0), (9000, 0, 0), height=2700)
make_wall("Tall wall", (0, 3000, 0), (2000, 3000, 0), height=4200)
make_wall("Low wall", (0, 6000, 0), (4000, 6000, 0), height=900)
