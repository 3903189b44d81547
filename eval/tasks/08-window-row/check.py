expect_census({"Wall": 1, "Window": 3})
facade = one("Facade", "Wall")
wins = of_kind("Window")
for x in (2000, 5000, 8000):
    at = [w for w in wins if near(box(w).Center.x, x, 5)]
    expect(len(at) == 1, "%d windows centred at x=%d, want 1" % (len(at), x))
    w = at[0]
    expect(hosts(w) == [facade], "the window at x=%d is not hosted by the Facade wall" % x)
    expect_near(mm(w.Width), 1000, "window width")
    expect_near(mm(w.Height), 1200, "window height")
    expect_near(box(w).ZMin, 900, "sill of the window at x=%d" % x, 5)
