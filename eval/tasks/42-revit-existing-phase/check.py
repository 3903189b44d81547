expect_census({"walls": 3, "doors": 1, "levels": 2})
l1 = level_named("Level 1")
phase = lambda e: doc.GetElement(e.CreatedPhaseId).Name
got = sorted((type(e).__name__, doc.GetElement(e.LevelId).Name, phase(e), e.DemolishedPhaseId.Value) for e in walls() + doors())
want = [("FamilyInstance", "Level 1", "New Construction", -1), ("Wall", "Level 1", "Existing", -1),
        ("Wall", "Level 1", "Existing", -1), ("Wall", "Level 2", "New Construction", -1)]
expect(got == want, "(element, level, phase created, demolished): %s" % got)
