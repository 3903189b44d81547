expect_census({"Building Storey": 3})
want = one("Level 2", "Building Storey").Placement.Base.z
said = [n for n in numbers(ANSWER) if n != 2]
expect(said, "the answer holds no elevation: %r" % ANSWER[:200])
expect(near(said[-1], want, 0.5), "the answer says %g mm, Level 2 is at %.0f mm" % (said[-1], want))
