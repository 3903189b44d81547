import Arch

for label in ("Level 1", "Level 2"):
    Arch.makeFloor().Label = label
