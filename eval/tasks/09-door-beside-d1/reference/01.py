import Arch

hall = doc.getObjectsByLabel("Hall wall")[0]
door = Arch.makeWindowPreset("Simple door", width=900, height=2100, h1=50, h2=50, h3=50, w1=200, w2=50, o1=0, o2=50,
                             placement=App.Placement(App.Vector(3000, -100, 0), App.Rotation(App.Vector(1, 0, 0), 90)))
door.Hosts = [hall]
door.Label = "D2"
print(door.Name, door.Label)
