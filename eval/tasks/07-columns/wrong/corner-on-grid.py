import Arch

# The columns' corners, not their centres, land on the rectangle's corners.
for x, y in ((0, 0), (6000, 0), (0, 4000), (6000, 4000)):
    col = Arch.makeStructure(length=300, width=300, height=3000)
    col.IfcType = "Column"
    col.Placement = App.Placement(App.Vector(x + 150, y + 150, 0), App.Rotation())
