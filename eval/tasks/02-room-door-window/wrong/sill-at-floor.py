import Arch

south = doc.getObjectsByLabel("South wall")[0]
north = doc.getObjectsByLabel("North wall")[0]
up = App.Rotation(App.Vector(1, 0, 0), 90)
door = Arch.makeWindowPreset("Simple door", width=900, height=2100, h1=50, h2=50, h3=50, w1=200, w2=50, o1=0, o2=50,
                             placement=App.Placement(App.Vector(500, -100, 0), up))
door.Hosts = [south]
window = Arch.makeWindowPreset("Fixed", width=1200, height=1200, h1=50, h2=50, h3=50, w1=200, w2=50, o1=0, o2=50,
                               placement=App.Placement(App.Vector(1400, 2900, 0), up))
window.Hosts = [north]
