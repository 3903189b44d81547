make_room(make_level("Level 1"), 0, 0, 4000, 3000)
for i in range(3):
    Draft.makeLine(App.Vector(0, -1000 - 500 * i, 0), App.Vector(4000, -1000 - 500 * i, 0)).Label = "Construction line %d" % (i + 1)
for i in range(2):
    Draft.makePoint(App.Vector(500 * i, 5000, 0)).Label = "Marker %d" % (i + 1)
