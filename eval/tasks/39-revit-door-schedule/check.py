expect_census({"walls": 1, "doors": 2, "levels": 2})
found = [s for s in FilteredElementCollector(doc).OfClass(ViewSchedule) if s.Name == "Door Schedule - Marks"]
expect(len(found) == 1, "want one schedule named 'Door Schedule - Marks', found %s" % [s.Name for s in FilteredElementCollector(doc).OfClass(ViewSchedule)])
d = found[0].Definition
cat = d.CategoryId.Value
expect(cat == int(BuiltInCategory.OST_Doors), "the schedule lists category %s, not Doors" % cat)
cols = [d.GetField(i).GetName() for i in range(d.GetFieldCount())]
expect(cols == ["Mark", "Level", "Type"], "the columns are %s" % cols)
