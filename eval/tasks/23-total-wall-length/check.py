expect_census({"Building Storey": 1, "Wall": 6})
want = sum(mm(w.Length) for w in of_kind("Wall")) / 1000
said = [n for n in numbers(ANSWER) if n > 1]
expect(said, "the answer holds no length: %r" % ANSWER[:200])
expect(near(said[-1], want, 0.01), "the answer says %g m, the walls add up to %.2f m" % (said[-1], want))
