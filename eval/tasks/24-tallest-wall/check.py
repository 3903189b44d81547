expect_census({"Wall": 3})
top = max(of_kind("Wall"), key=lambda w: mm(w.Height))
named = [w.Label for w in of_kind("Wall") if w.Label in ANSWER]
expect(named == [top.Label], "the answer names %s, the tallest wall is %s" % (named, top.Label))
expect(mm(top.Height) in numbers(ANSWER), "the answer does not give its height, %.0f mm" % mm(top.Height))
