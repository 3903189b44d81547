# Nexus change report for Revit. Runs read-only right after a commit in the
# add-in's CPython session, where doc is the active Autodesk.Revit.DB.Document
# and nexus_changes() gives the element ids the transaction added, modified
# and deleted (from the DocumentChanged event).
try:
    import clr

    clr.AddReference("RevitAPI")
except ImportError:
    pass
from Autodesk.Revit.DB import ElementId

NAMED_LIMIT = 15

_changes = nexus_changes()


def _id_value(eid):
    value = getattr(eid, "Value", None)
    if value is None:
        value = eid.IntegerValue
    return int(value)


def _element(id_int):
    return doc.GetElement(ElementId(id_int))


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
        return {"id": id_int, "category": "Unknown", "type": "", "name": "", "level": ""}
    category = el.Category.Name if el.Category is not None else el.GetType().Name
    kind = ""
    type_id = el.GetTypeId()
    if type_id != ElementId.InvalidElementId:
        el_type = doc.GetElement(type_id)
        if el_type is not None:
            family = getattr(el_type, "FamilyName", "") or ""
            kind = ("%s: %s" % (family, el_type.Name)) if family else el_type.Name
    return {"id": id_int, "category": category, "type": kind, "name": el.Name, "level": _level_name(el)}


def _line(sign, d):
    where = (" on %s" % d["level"]) if d["level"] else ""
    return '%s #%d  %s  %s  "%s"%s' % (sign, d["id"], d["category"], d["type"], d["name"], where)


def _grouped(title, items):
    groups = {}
    for d in items:
        key = (d["category"], d["type"])
        if key not in groups:
            groups[key] = [0, d["id"]]
        groups[key][0] += 1
    print("%s by category and type:" % title)
    for (category, kind), (count, example) in sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0])):
        print("  %s / %s: %d (e.g. #%d)" % (category, kind, count, example))


def _report():
    added = [_describe(i) for i in _changes.get("added", [])]
    modified = [_describe(i) for i in _changes.get("modified", [])]
    deleted = list(_changes.get("deleted", []))
    total = len(added) + len(modified) + len(deleted)
    print("=== CHANGE REPORT ===")
    print("%d element(s) changed: %d added, %d modified, %d deleted" %
          (total, len(added), len(modified), len(deleted)))
    if total == 0:
        print("The transaction committed but changed nothing.")
        return
    if total <= NAMED_LIMIT:
        for sign, items in (("+", added), ("~", modified)):
            for d in items:
                print(_line(sign, d))
    else:
        for title, items in (("Added", added), ("Modified", modified)):
            if items:
                _grouped(title, items)
    if deleted:
        # Revit cannot describe an element once it is gone; its id is all that is left.
        shown = ", ".join("#%d" % int(i) for i in deleted[:NAMED_LIMIT])
        more = " and %d more" % (len(deleted) - NAMED_LIMIT) if len(deleted) > NAMED_LIMIT else ""
        print("Deleted: %d element(s): %s%s" % (len(deleted), shown, more))
    levels = sorted({d["level"] for d in added + modified if d["level"]})
    if levels:
        print("Levels touched: %s" % ", ".join(levels))


_report()
