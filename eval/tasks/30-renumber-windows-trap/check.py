expect_census({"Wall": 2, "Window": 4})
facade = one("Facade", "Wall")
mine = sorted((w for w in of_kind("Window") if hosts(w) == [facade]), key=lambda w: box(w).XMin)
got = [w.Label for w in mine]
expect(got == ["W1", "W2", "W3"], "the Facade's windows from start to end are %s, want W1, W2, W3" % got)
other = [w for w in of_kind("Window") if w not in mine]
expect(len(other) == 1 and other[0].Label not in got, "the Garage window's label %r clashes" % (other[0].Label if other else None))
