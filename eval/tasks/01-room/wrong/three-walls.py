import Arch, Draft

level = Arch.makeFloor()
level.Label = "Level 1"
corners = [(0, 0), (4000, 0), (4000, 3000), (0, 3000)]
for i in range(3):  # forgets the closing wall
    (x, y), (nx, ny) = corners[i], corners[i + 1]
    wall = Arch.makeWall(Draft.makeLine(App.Vector(x, y, 0), App.Vector(nx, ny, 0)), width=200, height=2700, align="Center")
    level.addObject(wall)
