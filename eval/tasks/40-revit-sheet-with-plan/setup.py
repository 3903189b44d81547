l1 = level_named("Level 1")
make_wall((0, 0), (9000, 0), l1)
vft = [v for v in FilteredElementCollector(doc).OfClass(ViewFamilyType) if v.ViewFamily == ViewFamily.ThreeDimensional][0]
v = View3D.CreateIsometric(doc, vft.Id)
v.Name = "Level 1"
