# Nexus change report for Revit: the collector, followed by change_report.py.
# Runs read-only right after a commit (or in a preview) in the
# add-in's CPython session, where doc is the active Autodesk.Revit.DB.Document
# and nexus_changes() gives the element ids the transaction added, modified
# and deleted (from the DocumentChanged event) as decimal strings, and the
# warnings Revit's failure processing posted.
try:
    import clr

    clr.AddReference("RevitAPI")
except ImportError:
    pass
from Autodesk.Revit.DB import ElementId, ElementType

_changes = nexus_changes()
# Categories of the elements a building is made of; everything else (lines,
# sketches, reference planes, dimensions, tags, views) is a construction
# helper, counted by kind.
_BUILDING = {"Walls", "Doors", "Windows", "Floors", "Levels", "Roofs", "Ceilings", "Stairs", "Railings",
             "Ramps", "Columns", "Structural Columns", "Structural Framing", "Structural Foundations",
             "Curtain Panels", "Curtain Wall Mullions", "Rooms", "Areas", "Furniture", "Casework",
             "Generic Models", "Plumbing Fixtures", "Specialty Equipment", "Mechanical Equipment",
             "Lighting Fixtures", "Electrical Fixtures", "Topography", "Toposolid", "Site", "Parking",
             "Planting", "Shaft Openings", "Openings"}
_HELPER_KINDS = {"Lines": "line", "<Sketch>": "sketch", "Sketch": "sketch", "Reference Planes": "reference plane",
                 "Dimensions": "dimension", "Text Notes": "text note", "Grids": "grid", "Scope Boxes": "scope box",
                 "Generic Annotations": "annotation", "Detail Items": "detail item"}


def _id_value(eid):
    value = getattr(eid, "Value", None)
    if value is None:
        value = eid.IntegerValue
    return int(value)


def _element(id_text):
    return doc.GetElement(ElementId(int(id_text)))


def _level_name(el):
    level_id = getattr(el, "LevelId", None)
    if level_id is not None and level_id != ElementId.InvalidElementId:
        level = doc.GetElement(level_id)
        if level is not None:
            return level.Name
    host = getattr(el, "Host", None)
    if host is not None:
        return _level_name(host)
    return ""


def _describe(id_int):
    el = _element(id_int)
    if el is None:
        return {"id": id_int, "category": "", "type": "", "label": "", "level": "", "helper": "unknown element"}
    category = el.Category.Name if el.Category is not None else el.GetType().Name
    if isinstance(el, ElementType):
        # A type (a door size activated, a wall type edited) is not an
        # element of the building: counted, by the category it types.
        kind = "%s type" % (category[:-1] if category.endswith("s") else category).lower()
        return {"id": id_int, "category": "", "type": "", "label": el.Name, "level": "", "helper": kind}
    if category not in _BUILDING:
        kind = _HELPER_KINDS.get(category) or "%s element" % category
        return {"id": id_int, "category": "", "type": "", "label": el.Name, "level": "", "helper": kind}
    kind = ""
    type_id = el.GetTypeId()
    if type_id != ElementId.InvalidElementId:
        el_type = doc.GetElement(type_id)
        if el_type is not None:
            family = getattr(el_type, "FamilyName", "") or ""
            kind = ("%s: %s" % (family, el_type.Name)) if family else el_type.Name
    return {"id": id_int, "category": category, "type": kind, "label": el.Name, "level": _level_name(el), "helper": ""}


def _describe_deleted(id_int):
    # Revit cannot describe an element once it is gone.
    return None


def _element_line(sign, d):
    """One element as the article's report names it:
    "+ #id Walls | Basic Wall: Generic - 200mm | Level: Level 1"."""
    parts = ["%s #%s %s" % (sign, d["id"], d["category"])]
    if d["type"]:
        parts.append(d["type"])
    elif d["label"]:
        parts.append('"%s"' % d["label"])
    if d["level"]:
        parts.append("Level: %s" % d["level"])
    props = d.get("properties") or []
    if props:
        parts.append("changed: %s" % ", ".join(props[:8]))
    return " | ".join(parts)


def _host_notes():
    """Revit's warnings on the commit (its failure processing posted them;
    the add-in took them as notes instead of a dialog)."""
    warnings = _changes.get("warnings") or []
    return ["Revit warning: %s" % w for w in warnings]
