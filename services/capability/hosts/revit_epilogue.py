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


def _words(name):
    """An API class name as words: "SketchPlane" is "sketch plane"."""
    out = ""
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out += " "
        out += c.lower()
    return out.replace("3 d", "3D").replace("3d", "3D")


def _singular(category):
    return category[:-1] if category.endswith("s") and not category.endswith("ss") else category


def _helper_kind(category, class_name):
    """What a person calls an element that is not part of the building: its
    kind by category ("line", "view"), or by its API class where Revit gives
    it no category (a sketch plane)."""
    if category:
        return _HELPER_KINDS.get(category) or _singular(category).lower()
    return _words(class_name)


def _describe_fields(id_int, class_name, category, type_name, label, level, is_type):
    if is_type:
        # A type (a door size activated, a wall type edited) is not an
        # element of the building: counted, by the category it types.
        kind = "%s type" % (_singular(category).lower() if category else _words(class_name))
        return {"id": id_int, "category": "", "type": "", "label": label, "level": "", "helper": kind}
    if category not in _BUILDING:
        return {"id": id_int, "category": "", "type": "", "label": label, "level": "",
                "helper": _helper_kind(category, class_name)}
    return {"id": id_int, "category": category, "type": type_name, "label": label, "level": level, "helper": ""}


def _describe(id_int):
    el = _element(id_int)
    if el is None:
        # The runtime lists only elements that are there; one that is not
        # was deleted by what ran after the transaction.
        return _describe_deleted(id_int) or {"id": id_int, "category": "", "type": "", "label": "", "level": "",
                                              "helper": "element deleted since"}
    category = el.Category.Name if el.Category is not None else ""
    kind = ""
    type_id = el.GetTypeId()
    if type_id != ElementId.InvalidElementId:
        el_type = doc.GetElement(type_id)
        if el_type is not None:
            family = getattr(el_type, "FamilyName", "") or ""
            kind = ("%s: %s" % (family, el_type.Name)) if family else el_type.Name
    return _describe_fields(id_int, el.GetType().Name, category, kind, el.Name, _level_name(el),
                            isinstance(el, ElementType))


def _describe_deleted(id_int):
    # Revit cannot describe an element once it is gone: the runtime read
    # what it was before the transaction.
    info = (_changes.get("deleted_info") or {}).get(str(id_int))
    if not info:
        return None
    class_name = info.get("class", "")
    return _describe_fields(id_int, class_name, info.get("category", ""), info.get("type", ""),
                            info.get("label", ""), info.get("level", ""), bool(info.get("isType")))


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


def _worksets_line():
    """In a workshared project, the worksets of the elements the transaction
    added or modified, with how many of each: what the person will
    synchronize with central (the add-in never does)."""
    if not getattr(doc, "IsWorkshared", False):
        return []
    table = doc.GetWorksetTable()
    counts = {}
    for id_text in list(_changes.get("added") or []) + list(_changes.get("modified") or []):
        el = _element(id_text)
        if el is None:
            continue
        workset = table.GetWorkset(el.WorksetId)
        if workset is not None:
            counts[workset.Name] = counts.get(workset.Name, 0) + 1
    if not counts:
        return []
    return ["Worksets touched: %s (the person synchronizes with central; Nexus never does)"
            % ", ".join("%s (%d)" % (name, n) for name, n in sorted(counts.items()))]


def _host_notes():
    """Revit's warnings on the commit (its failure processing posted them;
    the add-in took them as notes instead of a dialog), the dialogs the
    add-in answered while the script ran, and the worksets touched in a
    workshared project."""
    warnings = _changes.get("warnings") or []
    dialogs = _changes.get("dialogs") or []
    return ["Revit warning: %s" % w for w in warnings] + dialogs + _worksets_line()
