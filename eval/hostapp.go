package eval

import "fmt"

// Host is the application a task runs in; task.json's "host" names it and
// `nexus eval` starts that host's runtime.
type Host int

const (
	// HostFreeCAD is FreeCAD, the default when task.json names no host.
	HostFreeCAD Host = iota + 1
	// HostRevit is Revit (in tests, the add-in's runtime on the double).
	HostRevit
)

func (h Host) String() string {
	switch h {
	case HostFreeCAD:
		return "freecad"
	case HostRevit:
		return "revit"
	}
	return fmt.Sprintf("host(%d)", int(h))
}

// parseHost reads task.json's host; empty is FreeCAD.
func parseHost(s string) (Host, bool) {
	switch s {
	case "", "freecad":
		return HostFreeCAD, true
	case "revit":
		return HostRevit, true
	}
	return 0, false
}

// libFile is the checkers' library of a host, in front of its setups and
// checkers.
func (h Host) libFile() string {
	if h == HostRevit {
		return "lib_revit.py"
	}
	return "lib.py"
}

// RevitClearCode gives a Revit task its starting document: the new project
// as the double seeds it (Level 1 at 0, Level 2 at 4000 mm, no building
// elements, rooms, annotation, schedules or sheets). Deleting a wall deletes
// the doors it hosts, its curtain grid and its tags, so those go first.
const RevitClearCode = `from Autodesk.Revit.DB import *
ids = []
for bic in (BuiltInCategory.OST_DoorTags, BuiltInCategory.OST_WindowTags, BuiltInCategory.OST_Viewports,
            BuiltInCategory.OST_Doors, BuiltInCategory.OST_Windows, BuiltInCategory.OST_Walls, BuiltInCategory.OST_Floors,
            BuiltInCategory.OST_LightingFixtures, BuiltInCategory.OST_Furniture, BuiltInCategory.OST_Rooms,
            BuiltInCategory.OST_Sheets):
    ids += [e.Id for e in FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType()]
ids += [v.Id for v in FilteredElementCollector(doc).OfClass(ViewSchedule)]
for i in ids:
    if doc.GetElement(i) is not None:
        doc.Delete(i)
levels = sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)
for l in levels[2:]:
    doc.Delete(l.Id)
for l, name, mm in zip(levels, ("Level 1", "Level 2"), (0, 4000)):
    l.Elevation = UnitUtils.ConvertToInternalUnits(mm, UnitTypeId.Millimeters)
    l.Name = name
print("cleared")
`

// clearCode is the script that empties the host's document.
func (h Host) clearCode() string {
	if h == HostRevit {
		return RevitClearCode
	}
	return ClearCode
}
