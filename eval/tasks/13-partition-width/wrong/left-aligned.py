wall = doc.getObjectsByLabel("Partition")[0]
wall.Width = 100
wall.Align = "Left"
