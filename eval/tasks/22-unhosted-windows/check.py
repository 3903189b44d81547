import re
expect_census({"Wall": 1, "Window": 4})
want = sorted(w.Label for w in of_kind("Window") if not hosts(w))
said = sorted(set(re.findall(r"\bW\d+\b", ANSWER)))
expect(said == want, "the answer names %s, the windows that cut no wall are %s" % (said, want))
