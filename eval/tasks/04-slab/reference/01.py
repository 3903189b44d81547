import Arch

slab = Arch.makeStructure(length=6000, width=4000, height=200)
slab.IfcType = "Slab"
slab.Label = "Floor slab"
# makeStructure centres the block on its placement in plan and builds it upward.
slab.Placement = App.Placement(App.Vector(3000, 2000, -200), App.Rotation())
