l1, l2 = level_named("Level 1"), level_named("Level 2")
expect_census({"walls": 6, "doors": 9, "levels": 4})
on_line = lambda w: sorted(ends_mm(w)) == [(0, 0), (18000, 0)]
facade = [w for w in walls() if on_line(w)]
by_level = sorted((doc.GetElement(w.LevelId).Name, w.WallType.Name) for w in facade)
expect(by_level == [("Level 1", "Curtain Wall 1"), ("Level 2", "Exterior - Brick on CMU")],
       "the walls along y = 0 (level, type): %s" % by_level)
cw = [w for w in facade if w.LevelId == l1.Id][0]
h = mm(cw.get_Parameter(BuiltInParameter.WALL_USER_HEIGHT_PARAM).AsDouble())
expect(abs(h - 8000) < 1, "the curtain wall is %.0f mm high, want 8000" % h)
grid = cw.CurtainGrid
vs = sorted(round(mm(doc.GetElement(i).FullCurve.GetEndPoint(0).X)) for i in grid.GetVGridLineIds())
expect(vs == list(range(1500, 18000, 1500)), "vertical grid lines at x (mm): %s" % vs)
us = sorted(round(mm(doc.GetElement(i).FullCurve.GetEndPoint(0).Z)) for i in grid.GetUGridLineIds())
expect(us == [4000], "horizontal grid lines at z (mm): %s" % us)
mullions = [doc.GetElement(i) for i in grid.GetMullionIds()]
expect(all(m.MullionType.Name == "50 x 150mm" for m in mullions), "mullion types: %s" % sorted({m.MullionType.Name for m in mullions}))
lines = {round(mm(m.LocationCurve.GetEndPoint(0).X)) if abs(m.LocationCurve.GetEndPoint(0).Z - m.LocationCurve.GetEndPoint(1).Z) > 1e-6 else -round(mm(m.LocationCurve.GetEndPoint(0).Z)) for m in mullions}
expect(len(mullions) == 12 and len(lines) == 12, "want a mullion on each of the 12 grid lines, found %d on %d lines" % (len(mullions), len(lines)))
expect(grid.NumPanels == 24, "the grid has %d panels, want 12 x 2" % grid.NumPanels)
