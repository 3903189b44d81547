GRID = {"Grid A": ((0, 0, 0), (8000, 0, 0)), "Grid B": ((0, 5000, 0), (8000, 5000, 0)),
        "Grid C": ((0, 0, 0), (0, 5000, 0)), "Grid D": ((8000, 0, 0), (8000, 5000, 0))}
for label, (a, b) in GRID.items():
    Draft.makeLine(App.Vector(*a), App.Vector(*b)).Label = label
