# Nexus change report for FreeCAD: the collector. Runs read-only right after a
# commit (or, in a preview, before the rollback), in the runtime's interpreter
# session, where nexus_changes() describes the transaction; change_report.py
# follows it and prints the report. Arch elements are building elements;
# sketches, Draft geometry, placements, annotations and anything else are
# construction helpers, counted by kind.

_doc = globals().get("doc") or App.ActiveDocument
_changes = nexus_changes()
_WINDOW_PRESETS = ["Fixed", "Open 1-pane", "Open 2-pane", "Sash 2-pane", "Sliding 2-pane",
                   "Simple door", "Glass door", "Sliding 4-pane", "Awning"]
_STRUCTURE = ("Column", "Beam", "Footing", "Member", "Plate", "Pile")
_SITE_TYPES = {"Building Storey": "Level", "Building": "Building", "Site": "Site"}
# Arch proxies that are building elements whatever their IfcType says.
_PROXY_CATEGORIES = {"Wall": "Wall", "CurtainWall": "Curtain wall", "Roof": "Roof", "Stairs": "Stair",
                     "Railing": "Railing", "Space": "Space", "Panel": "Panel", "Covering": "Covering",
                     "Rebar": "Rebar", "Equipment": "Equipment", "Pipe": "Pipe", "Frame": "Frame",
                     "Fence": "Fence", "Truss": "Truss"}
# Readable kinds of construction helpers: Draft and Arch proxies, then
# FreeCAD types, so a model can tell what its script made.
_DRAFT_KINDS = {"Wire": "Draft wire", "Line": "Draft line", "Rectangle": "Draft rectangle", "Circle": "Draft circle",
                "Polygon": "Draft polygon", "BSpline": "Draft curve", "BezCurve": "Draft curve", "Point": "Draft point",
                "Ellipse": "Draft ellipse", "Fillet": "Draft fillet", "Block": "Draft block",
                "DraftText": "annotation", "Text": "annotation", "Label": "annotation", "Dimension": "dimension",
                "LinearDimension": "dimension", "AngularDimension": "dimension", "Grid": "grid",
                "AxisSystem": "grid", "Axis": "grid", "SectionPlane": "section plane",
                "Array": "array", "PathArray": "path array", "PathTwistedArray": "path array",
                "PointArray": "point array", "Clone": "clone", "Facebinder": "facebinder", "Shape2DView": "2D view",
                "ShapeString": "shape string", "WorkingPlaneProxy": "working plane", "Hatch": "hatch",
                "Layer": "layer", "LayerContainer": "layer container", "DrawingView": "drawing view",
                "ArchSectionView": "section view", "Material": "material", "MultiMaterial": "multi-material",
                "MaterialContainer": "material container", "Profile": "profile", "Schedule": "schedule",
                "PanelCut": "panel cut", "PanelSheet": "panel sheet", "Component": "component"}
_TYPE_KINDS = {"Sketcher::SketchObject": "sketch", "App::Placement": "placement", "App::Origin": "placement",
               "App::Line": "placement", "App::Plane": "placement", "App::DocumentObjectGroup": "group",
               "App::Annotation": "annotation", "App::AnnotationLabel": "annotation", "App::MeasureDistance": "dimension",
               "App::Part": "part", "App::Link": "link", "Part::Feature": "shape", "Part::Box": "box",
               "Part::Cylinder": "cylinder", "Part::Sphere": "sphere", "Part::Cone": "cone", "Part::Torus": "torus",
               "Part::Prism": "prism", "Part::Wedge": "wedge", "Part::Extrusion": "extrusion",
               "Part::Revolution": "revolution", "Part::Mirroring": "mirror", "Part::Cut": "cut",
               "Part::Fuse": "union", "Part::MultiFuse": "union", "Part::Common": "intersection",
               "Part::MultiCommon": "intersection", "Part::Compound": "compound", "Part::Offset": "offset",
               "Part::Thickness": "thickness", "Part::Loft": "loft", "Part::Sweep": "sweep",
               "Drawing::FeaturePage": "drawing page", "TechDraw::DrawPage": "drawing page",
               "Spreadsheet::Sheet": "spreadsheet"}
# A Draft array says how it repeats in ArrayType.
_ARRAY_KINDS = {"ortho": "ortho array", "polar": "polar array", "circular": "circular array"}


def _window_category(ifc, preset_name):
    if ifc in ("Door", "Window"):
        return ifc
    return "Door" if "door" in preset_name.lower() else "Window"


def _category(ifc, type_id, proxy_type, preset_name=""):
    """Answers (category, helper): the building element's category, or ""
    and the readable kind of a construction helper."""
    if proxy_type == "Window" or ifc in ("Door", "Window"):
        return _window_category(ifc, preset_name), ""
    if ifc in ("Wall", "Wall Standard Case"):
        return "Wall", ""
    if proxy_type in _PROXY_CATEGORIES:
        return _PROXY_CATEGORIES[proxy_type], ""
    if ifc in _STRUCTURE:
        return ifc, ""
    if ifc == "Slab":
        return "Slab", ""
    if ifc in _SITE_TYPES:
        return _SITE_TYPES[ifc], ""
    if proxy_type in ("BuildingPart", "Floor", "Building", "Site"):
        return _SITE_TYPES.get(proxy_type, "Level"), ""
    if ifc == "Roof":
        return "Roof", ""
    if ifc in ("Stair", "Stair Flight"):
        return "Stair", ""
    if proxy_type in _DRAFT_KINDS:
        return "", _DRAFT_KINDS[proxy_type]
    if type_id in _TYPE_KINDS:
        return "", _TYPE_KINDS[type_id]
    if ifc and ifc not in ("Undefined", "Annotation", "Building Element Proxy"):
        # Any other Arch element with a real IFC class is a building element.
        return ifc, ""
    return "", "%s object" % (type_id or "unknown")


def _preset_name(obj):
    preset = getattr(obj, "Preset", 0) or 0
    return _WINDOW_PRESETS[preset - 1] if 0 < preset <= len(_WINDOW_PRESETS) else ""


def _mm(q):
    try:
        return "%g" % float(q.Value if hasattr(q, "Value") else q)
    except Exception:
        return "?"


def _type_of(obj, category):
    ifc = str(getattr(obj, "IfcType", "") or "")
    if category in ("Door", "Window"):
        name = _preset_name(obj) or "Custom " + category.lower()
        return "%s %sx%s" % (name, _mm(getattr(obj, "Width", 0)), _mm(getattr(obj, "Height", 0)))
    if category == "Wall":
        return "Wall %s mm" % _mm(getattr(obj, "Width", 0))
    if category in _STRUCTURE:
        return "%s %sx%s" % (ifc, _mm(getattr(obj, "Length", 0)), _mm(getattr(obj, "Width", 0)))
    if category == "Slab":
        return "Slab %s mm" % _mm(getattr(obj, "Height", 0))
    if category in ("Level", "Building", "Site"):
        return ifc or "BuildingPart"
    return obj.TypeId


def _is_level(obj):
    return _proxy_type(obj) in ("BuildingPart", "Floor") or str(getattr(obj, "IfcType", "")) == "Building Storey"


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


def _proxy_type(obj):
    proxy = getattr(obj, "Proxy", None)
    return str(getattr(proxy, "Type", "") or "") if proxy is not None else ""


def _describe(name):
    obj = _doc.getObject(name)
    if obj is None:
        return {"id": name, "category": "", "type": "", "label": "", "level": "", "helper": "object"}
    category, helper = _category(str(getattr(obj, "IfcType", "") or ""), obj.TypeId, _proxy_type(obj),
                                 _preset_name(obj))
    if helper == "Draft wire" and len(getattr(obj, "Points", None) or []) == 2:
        # Draft.makeLine makes a wire of two points.
        helper = "Draft line"
    elif helper == "array":
        helper = _ARRAY_KINDS.get(str(getattr(obj, "ArrayType", "")), helper)
    elif helper == "Draft circle" and getattr(obj, "FirstAngle", 0) != getattr(obj, "LastAngle", 0):
        helper = "Draft arc"
    if helper:
        return {"id": name, "category": "", "type": obj.TypeId, "label": obj.Label, "level": "", "helper": helper}
    return {"id": name, "category": category, "type": _type_of(obj, category),
            "label": obj.Label, "level": _level_of(obj), "helper": ""}


def _describe_deleted(name):
    info = (_changes.get("deleted_info") or {}).get(name) or {}
    category, helper = _category(info.get("ifcType", ""), info.get("typeId", ""), info.get("proxyType", ""))
    return {"id": name, "category": category, "type": info.get("typeId", ""),
            "label": info.get("label", ""), "level": "", "helper": helper}
