"""What kind of element a FreeCAD object is, and whether it is drawn."""


def category_of(obj):
    ifc = str(getattr(obj, "IfcType", "") or "")
    if ifc in ("Wall", "Wall Standard Case"):
        return "Wall"
    if ifc == "Door":
        return "Door"
    if ifc == "Window":
        return "Window"
    if ifc in ("Column", "Beam", "Footing", "Member", "Plate", "Pile"):
        return "Structure"
    if ifc == "Slab":
        return "Floor"
    if ifc == "Roof":
        return "Roof"
    return ""


def renderable(obj):
    shape = getattr(obj, "Shape", None)
    if shape is None or not hasattr(shape, "Faces"):
        return False
    try:
        if shape.isNull() or not shape.Faces:
            return False
    except Exception:
        return False
    if hasattr(obj, "Group"):
        return False
    try:
        if not obj.Visibility:
            return False
    except Exception:
        pass
    for parent in getattr(obj, "InList", []):
        # Objects consumed by another (a wall's base, a window's sketch, a
        # boolean's operands) are drawn through their consumer.
        if getattr(parent, "Base", None) == obj:
            return False
        for attr in ("Additions", "Subtractions", "Shapes", "Objects"):
            if obj in (getattr(parent, attr, None) or []):
                return False
        if obj in (getattr(parent, "OutList", None) or []) and parent.TypeId.startswith("Part::"):
            if parent.TypeId in ("Part::Cut", "Part::Fuse", "Part::Common", "Part::MultiFuse",
                                 "Part::MultiCommon", "Part::Extrusion", "Part::Revolution"):
                return False
    return True


def alive(doc):
    try:
        doc.Name
        return True
    except Exception:
        return False


def doc_label(doc):
    if doc is None:
        return ""
    return doc.FileName or doc.Name
