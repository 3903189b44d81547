module nexus.local/hosts/freecad

go 1.26.0
