import Arch

stair = Arch.makeStairs(length=4250, width=1000, height=3000, steps=17)
print(stair.Label, stair.NumberOfSteps, "steps")
