import Arch

for line in [o for o in doc.Objects if o.Label.startswith("Grid ")]:
    Arch.makeWall(line, width=200, height=3000, align="Left")
