import Arch, Draft

level = Arch.makeFloor()
level.Label = "Level 1"
corners = [(0, 0), (4000, 0), (4000, 3000), (0, 3000)]
for i, (x, y) in enumerate(corners):
    nx, ny = corners[(i + 1) % 4]
    Arch.makeWall(Draft.makeLine(App.Vector(x, y, 0), App.Vector(nx, ny, 0)), width=200, height=2700, align="Center")
