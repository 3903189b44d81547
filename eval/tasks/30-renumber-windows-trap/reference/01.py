facade = doc.getObjectsByLabel("Facade")[0]
mine = sorted((o for o in doc.Objects if getattr(o, "IfcType", "") == "Window" and facade in o.Hosts), key=lambda w: w.Shape.BoundBox.XMin)
taken = [o for o in doc.Objects if o.Label in ("W1", "W2", "W3") and o not in mine]
for o in taken:
    o.Label = "Garage " + o.Label  # free the label, say where it came from
    print("relabelled the other", o.Label)
for w in mine:
    w.Label = "tmp " + w.Name  # step aside first, so no label is taken twice
for i, w in enumerate(mine):
    w.Label = "W%d" % (i + 1)
    print(w.Name, "->", w.Label)
