expect_census({"Stair": 1})
s = of_kind("Stair")[0]
expect(s.NumberOfSteps == 17, "the stair has %d steps, want 17" % s.NumberOfSteps)
expect_near(mm(s.Height), 3000, "stair rise")
expect_near(mm(s.Width), 1000, "stair width")
expect_near(mm(s.Length), 4250, "stair run")
