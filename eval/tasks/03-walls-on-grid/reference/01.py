import Arch

grid = [o for o in doc.Objects if o.Label.startswith("Grid ")]
for line in grid:
    wall = Arch.makeWall(line, width=200, height=3000, align="Center")
    wall.Label = "Wall on " + line.Label
print("walls on", ", ".join(sorted(g.Label for g in grid)))
