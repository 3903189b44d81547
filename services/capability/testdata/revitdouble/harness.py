"""Runs the Nexus Revit epilogue against the Revit API double.

Usage: python3 harness.py SCENARIO EPILOGUE_FILE
SCENARIO "few" builds two levels with walls, a door, a window and a floor,
drawn with model lines, a reference plane and a sketch plane; "many" builds
40 walls and doors; both also delete elements.
"""
import sys

from Autodesk.Revit.DB import (CurveElement, Document, ElementId, ElementType, FamilyInstance, Floor, Level,
                               ReferencePlane, SketchPlane, Wall)


def build(scenario):
    doc = Document()
    l1 = Level(doc, 311, "Level 1", 0.0)
    l2 = Level(doc, 312, "Level 2", 10.0)
    generic = ElementType(doc, 400, "Generic - 200mm", "Basic Wall", "Walls")
    door = ElementType(doc, 401, "0915 x 2134mm", "Single-Flush", "Doors")
    window = ElementType(doc, 402, "0915 x 1220mm", "Fixed", "Windows")
    added, modified = [], []
    if scenario == "few":
        w1 = Wall(doc, 1001, "Basic Wall", "Walls", generic.Id, l1.Id)
        w2 = Wall(doc, 1002, "Basic Wall", "Walls", generic.Id, l2.Id)
        d = FamilyInstance(doc, 1003, "0915 x 2134mm", "Doors", door.Id, None, w1)
        w = FamilyInstance(doc, 1004, "0915 x 1220mm", "Windows", window.Id, l2.Id, w2)
        slab = ElementType(doc, 403, "Generic 150mm", "Floor", "Floors")
        Floor(doc, 1005, "Floor", "Floors", slab.Id, l1.Id)
        for i in range(3):
            CurveElement(doc, 1010 + i, "Model Lines", "Lines")
        ReferencePlane(doc, 1020, "Reference Plane", "Reference Planes")
        SketchPlane(doc, 1021, "Level 1")
        added = [1001, 1002, 1003, 1004, 1005, 1010, 1011, 1012, 1020, 1021]
        modified = [312]
    else:
        for i in range(30):
            Wall(doc, 2000 + i, "Basic Wall", "Walls", generic.Id, l1.Id)
            added.append(2000 + i)
        for i in range(10):
            FamilyInstance(doc, 3000 + i, "0915 x 2134mm", "Doors", door.Id, l1.Id, None)
            added.append(3000 + i)
    return doc, {"added": added, "modified": modified, "deleted": [9001, 9002],
                 "changed": added + modified}


def main():
    scenario, path = sys.argv[1], sys.argv[2]
    doc, changes = build(scenario)
    code = open(path, encoding="utf-8").read()
    ns = {"__name__": "__nexus__", "doc": doc, "nexus_changes": lambda: dict(changes)}
    exec(compile(code, "<nexus-epilogue>", "exec"), ns)


main()
