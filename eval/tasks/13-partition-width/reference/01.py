wall = doc.getObjectsByLabel("Partition")[0]
wall.Width = 100
print(wall.Label, wall.Width, wall.Align)
