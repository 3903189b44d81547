# Nexus change report for FreeCAD: the collector. Runs read-only right after a
# commit, in the runtime's interpreter session, where nexus_changes() describes
# the transaction; change_report.py follows it and prints the report.

_doc = globals().get("doc") or App.ActiveDocument
_changes = nexus_changes()
_WINDOW_PRESETS = ["Fixed", "Open 1-pane", "Open 2-pane", "Sash 2-pane", "Sliding 2-pane",
                   "Simple door", "Glass door", "Sliding 4-pane", "Awning"]
_STRUCTURE = ("Column", "Beam", "Footing", "Member", "Plate", "Pile")
_LEVEL_TYPES = ("Building Storey", "Building", "Site")


def _category(ifc, type_id, proxy_type):
    if ifc in ("Wall", "Wall Standard Case"):
        return "Wall"
    if ifc in ("Door", "Window"):
        return ifc
    if ifc in _STRUCTURE:
        return "Structure"
    if ifc == "Slab":
        return "Floor"
    if ifc in _LEVEL_TYPES or proxy_type in ("BuildingPart", "Floor", "Building", "Site"):
        return "Level/BuildingPart"
    if ifc and ifc != "Undefined":
        return ifc
    if type_id.startswith("Sketcher::"):
        return "Sketch"
    if type_id.startswith("Part::"):
        return "Part"
    if type_id.startswith("App::DocumentObjectGroup"):
        return "Group"
    return type_id or "Object"


def _mm(q):
    try:
        return "%g" % float(q.Value if hasattr(q, "Value") else q)
    except Exception:
        return "?"


def _type_of(obj, category):
    ifc = str(getattr(obj, "IfcType", "") or "")
    if category in ("Door", "Window"):
        preset = getattr(obj, "Preset", 0) or 0
        name = _WINDOW_PRESETS[preset - 1] if 0 < preset <= len(_WINDOW_PRESETS) else "Custom " + category.lower()
        return "%s %sx%s" % (name, _mm(getattr(obj, "Width", 0)), _mm(getattr(obj, "Height", 0)))
    if category == "Wall":
        return "Wall %s mm" % _mm(getattr(obj, "Width", 0))
    if category == "Structure":
        return "%s %sx%s" % (ifc, _mm(getattr(obj, "Length", 0)), _mm(getattr(obj, "Width", 0)))
    if category == "Floor":
        return "Slab %s mm" % _mm(getattr(obj, "Height", 0))
    if category == "Level/BuildingPart":
        return ifc or "BuildingPart"
    return obj.TypeId


def _is_level(obj):
    proxy = getattr(obj, "Proxy", None)
    ptype = getattr(proxy, "Type", "") if proxy is not None else ""
    return ptype in ("BuildingPart", "Floor") or str(getattr(obj, "IfcType", "")) == "Building Storey"


def _level_of(obj, seen=None):
    seen = seen or set()
    if obj.Name in seen:
        return ""
    seen.add(obj.Name)
    for parent in obj.InList:
        if obj in (getattr(parent, "Group", None) or []):
            if _is_level(parent):
                return parent.Label
            found = _level_of(parent, seen)
            if found:
                return found
    for host in getattr(obj, "Hosts", None) or []:
        found = _level_of(host, seen)
        if found:
            return found
    return ""


def _describe(name):
    obj = _doc.getObject(name)
    if obj is None:
        return {"id": name, "category": "Object", "type": "", "label": "", "level": ""}
    proxy = getattr(obj, "Proxy", None)
    category = _category(str(getattr(obj, "IfcType", "") or ""), obj.TypeId,
                         getattr(proxy, "Type", "") if proxy is not None else "")
    return {"id": name, "category": category, "type": _type_of(obj, category),
            "label": obj.Label, "level": _level_of(obj)}


def _describe_deleted(name):
    info = (_changes.get("deleted_info") or {}).get(name) or {}
    category = _category(info.get("ifcType", ""), info.get("typeId", ""), "")
    return {"id": name, "category": category, "type": info.get("typeId", ""),
            "label": info.get("label", ""), "level": ""}
