import Arch

slab = Arch.makeStructure(length=6000, width=4000, height=200)
slab.IfcType = "Slab"
slab.Placement = App.Placement(App.Vector(3000, 2000, 0), App.Rotation())
