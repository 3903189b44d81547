import Arch

for x, y in ((0, 0), (6000, 0), (6000, 4000)):
    col = Arch.makeStructure(length=300, width=300, height=3000)
    col.IfcType = "Column"
    col.Placement = App.Placement(App.Vector(x, y, 0), App.Rotation())
