"""The affected view: which region a transaction changed, and how to show
it. Lengths are Revit's internal feet, as the framing rules' minExtent is."""
from nexus_revit.ids import element_id

_NOT_GEOMETRY = ("Views", "Levels")


def _box(el):
    if el is None or el.Category is None or el.Category.Name in _NOT_GEOMETRY:
        return None
    return el.get_BoundingBox(None)


def _union(boxes):
    from Autodesk.Revit.DB import XYZ
    return (XYZ(min(b.Min.X for b in boxes), min(b.Min.Y for b in boxes), min(b.Min.Z for b in boxes)),
            XYZ(max(b.Max.X for b in boxes), max(b.Max.Y for b in boxes), max(b.Max.Z for b in boxes)))


def model_boxes(doc):
    from Autodesk.Revit.DB import FilteredElementCollector
    return [b for b in (_box(e) for e in FilteredElementCollector(doc).WhereElementIsNotElementType()) if b is not None]


def affected_region(doc, changed, framing):
    """Answers (window, ids, view, level id) framing the changed elements:
    window is (min XYZ, max XYZ) or None when the change spans most of the
    document; None when no geometry changed."""
    from Autodesk.Revit.DB import XYZ
    found = []
    for i in changed:
        el = doc.GetElement(element_id(i))
        box = _box(el)
        if box is not None:
            found.append((i, el, box))
    if not found:
        return None
    lo, hi = _union([b for _, _, b in found])
    wlo, whi = _union(model_boxes(doc) + [b for _, _, b in found])
    plan = max(hi.X - lo.X, hi.Y - lo.Y)
    ratio = float(framing.get("planMaxHeightRatio") or 0)
    view = "plan" if hi.Z - lo.Z <= ratio * max(plan, 1e-9) else "isometric"
    levels = [el.LevelId for _, el, _ in found]
    level = max(set(levels), key=levels.count)
    ids = [i for i, _, _ in found]
    whole_plan = max(whi.X - wlo.X, whi.Y - wlo.Y, 1e-9)
    if plan / whole_plan > float(framing.get("wholeShare") or 1):
        return None, ids, view, level
    pad = max(float(framing.get("margin") or 0) * plan, (float(framing.get("minExtent") or 0) - plan) / 2.0, 0.0)
    padz = 0.1 * (hi.Z - lo.Z)
    window = (XYZ(lo.X - pad, lo.Y - pad, lo.Z - padz), XYZ(hi.X + pad, hi.Y + pad, hi.Z + padz))
    return window, ids, view, level


def no_geometry_note(doc, changed):
    what = []
    for i in list(changed)[:10]:
        el = doc.GetElement(element_id(i))
        cat = el.Category.Name if el is not None and el.Category is not None else "element"
        what.append("#%s (%s)" % (i, cat))
    tail = "; it changed " + ", ".join(what) if what else "; it changed nothing"
    return "no image: the transaction changed no geometry (no changed element with a bounding box in a view)" + tail
