import Arch

for label, z in (("Level 1", 0), ("Level 2", 3000)):
    level = Arch.makeFloor()
    level.Label = label
    p = level.Placement
    p.Base.z = z
    level.Placement = p
