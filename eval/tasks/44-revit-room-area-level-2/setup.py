l1, l2 = level_named("Level 1"), level_named("Level 2")
make_box(0, 0, 10000, 6000, l2)
make_wall((6000, 0), (6000, 6000), l2)
for x in (3000, 8000):
    doc.Create.NewRoom(l2, UV(ft(x), ft(3000)))
make_box(0, 0, 5000, 5000, l1)
doc.Create.NewRoom(l1, UV(ft(2500), ft(2500)))
