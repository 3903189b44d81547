import Arch

facade = doc.getObjectsByLabel("Facade")[0]
up = App.Rotation(App.Vector(1, 0, 0), 90)
for centre in (2000, 5000):
    w = Arch.makeWindowPreset("Fixed", width=1000, height=1200, h1=50, h2=50, h3=50, w1=200, w2=50, o1=0, o2=50,
                              placement=App.Placement(App.Vector(centre - 500, -100, 900), up))
    w.Hosts = [facade]
