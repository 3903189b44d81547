expect_census({"Building Storey": 2, "Wall": 2, "Door": 4})
doors = sorted(members(one("Level 1"), "Door"), key=lambda d: box(d).XMin)
got = [d.Label for d in doors]
expect(got == ["D101", "D102", "D103"], "Level 1's doors from west to east are %s, want D101, D102, D103" % got)
upper = members(one("Level 2"), "Door")
expect([d.Label for d in upper] == ["D1"], "Level 2's door is labelled %s, want D1" % [d.Label for d in upper])
