# Nexus change report for Revit: the collector, followed by change_report.py.
# Runs read-only right after a commit in the
# add-in's CPython session, where doc is the active Autodesk.Revit.DB.Document
# and nexus_changes() gives the element ids the transaction added, modified
# and deleted (from the DocumentChanged event).
try:
    import clr

    clr.AddReference("RevitAPI")
except ImportError:
    pass
from Autodesk.Revit.DB import ElementId

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
        return {"id": id_int, "category": "Unknown", "type": "", "label": "", "level": ""}
    category = el.Category.Name if el.Category is not None else el.GetType().Name
    kind = ""
    type_id = el.GetTypeId()
    if type_id != ElementId.InvalidElementId:
        el_type = doc.GetElement(type_id)
        if el_type is not None:
            family = getattr(el_type, "FamilyName", "") or ""
            kind = ("%s: %s" % (family, el_type.Name)) if family else el_type.Name
    return {"id": id_int, "category": category, "type": kind, "label": el.Name, "level": _level_name(el)}


def _describe_deleted(id_int):
    # Revit cannot describe an element once it is gone.
    return None
