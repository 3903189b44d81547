expect_census({"Building Storey": 1, "Wall": 4})
walls = of_kind("Wall")
for a, b in (((0, 0, 0), (4000, 0, 0)), ((4000, 0, 0), (4000, 3000, 0)), ((4000, 3000, 0), (0, 3000, 0)), ((0, 3000, 0), (0, 0, 0))):
    n = len([w for w in walls if same_axis(w, a, b)])
    expect(n == 1, "%d walls run from %s to %s, want 1" % (n, a, b))
