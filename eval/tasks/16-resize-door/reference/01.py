d2 = doc.getObjectsByLabel("D2")[0]
d2.Width = 1000
doc.recompute()
print(d2.Label, d2.Width, d2.Shape.BoundBox.XMin)
