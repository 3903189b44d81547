w3 = doc.getObjectsByLabel("W3")[0]
c = w3.Shape.BoundBox.Center
host = [w for w in doc.Objects if getattr(w, "IfcType", "") == "Wall" and w.Shape.BoundBox.isInside(c)][0]
w3.Hosts = [host]
print("W3 now cuts", host.Label)
