import Arch

grid = sorted((o for o in doc.Objects if o.Label.startswith("Grid ")), key=lambda o: o.Label)
for line in grid + grid[:1]:  # Grid A twice
    Arch.makeWall(line, width=200, height=3000, align="Center")
