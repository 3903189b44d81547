d1 = doc.getObjectsByLabel("D1")[0]
d1.Width = 1000
