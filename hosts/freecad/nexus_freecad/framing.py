"""The affected view: which region a transaction changed, and how to show it."""

from nexus_freecad.elements import renderable


def _union(boxes):
    import FreeCAD
    out = FreeCAD.BoundBox()
    for b in boxes:
        out.add(b)
    return out


def geometric_changes(doc, tracker, framing):
    """Names of live objects whose geometry the transaction changed."""
    geometric = set(framing.get("geometricProperties") or ["Shape", "Placement"])
    names = []
    for name in list(tracker.added) + list(tracker.modified):
        obj = doc.getObject(name)
        if obj is None or not renderable(obj):
            continue
        if name in tracker.added or tracker.props.get(name, set()) & geometric:
            names.append(name)
    return names


def no_geometry_note(tracker, framing):
    changed = []
    for name in list(tracker.added) + list(tracker.modified):
        props = sorted(tracker.props.get(name, set()))
        changed.append("%s (%s)" % (name, ", ".join(props)) if props else name)
    what = "; it changed " + "; ".join(changed[:10]) if changed else "; it changed nothing"
    return ("no image: the transaction changed no geometry (no %s of a visible element)%s"
            % (" or ".join(framing.get("geometricProperties") or ["Shape", "Placement"]), what))


def affected_region(doc, tracker, framing):
    """Answers (window, names, view) framing the changed elements, with
    window None when the change spans most of the document; None when no
    geometry changed."""
    names = geometric_changes(doc, tracker, framing)
    boxes = [doc.getObject(n).Shape.BoundBox for n in names] + list(tracker.deleted_boxes)
    boxes = [b for b in boxes if b.isValid()]
    if not boxes:
        return None
    changed = _union(boxes)
    whole = _union([o.Shape.BoundBox for o in doc.Objects if renderable(o)] + boxes)
    plan = max(changed.XLength, changed.YLength)
    ratio = float(framing.get("planMaxHeightRatio") or 0)
    view = "plan" if changed.ZLength <= ratio * max(plan, 1e-9) else "isometric"
    share = float(framing.get("wholeShare") or 1)
    whole_plan = max(whole.XLength, whole.YLength, 1e-9)
    if plan / whole_plan > share:
        return None, names, view
    margin = float(framing.get("margin") or 0)
    minimum = float(framing.get("minExtent") or 0)
    pad = max(margin * plan, (minimum - plan) / 2.0, 0.0)
    # Room above and below matters little: in plan it is not seen, and in
    # isometric it only stretches the frame upright.
    padz = 0.1 * changed.ZLength
    import FreeCAD
    window = FreeCAD.BoundBox(changed.XMin - pad, changed.YMin - pad, changed.ZMin - padz,
                              changed.XMax + pad, changed.YMax + pad, changed.ZMax + padz)
    return window, names or ["(deleted)"], view
