"""The document's state read through the API, so a rollback is verified and
not assumed: every element's id, class, name, category, type, level,
location and parameter values. Two equal states are the same document as the
API sees it."""
from nexus_revit.ids import id_value


def _loc(el):
    loc = el.Location
    if loc is None:
        return None
    curve = getattr(loc, "Curve", None)
    if curve is not None:
        a, b = curve.GetEndPoint(0), curve.GetEndPoint(1)
        return ("curve", round(a.X, 9), round(a.Y, 9), round(a.Z, 9), round(b.X, 9), round(b.Y, 9), round(b.Z, 9))
    point = getattr(loc, "Point", None)
    if point is not None:
        return ("point", round(point.X, 9), round(point.Y, 9), round(point.Z, 9))
    return None


def _params(el):
    out = []
    for p in el.Parameters:
        try:
            value = p.AsValueString()
            if value is None:
                value = p.AsString()
        except Exception as exc:  # a parameter that cannot be read is part of the state too
            value = "error:%s" % type(exc).__name__
        out.append((p.Definition.Name, value))
    return tuple(sorted(out, key=lambda kv: (kv[0], str(kv[1]))))


def element_state(el):
    cat = el.Category
    return (el.GetType().Name, el.Name, cat.Name if cat is not None else "", id_value(el.GetTypeId()),
            id_value(el.LevelId), _loc(el), _params(el))


def document_state(doc):
    """{id: state} of every element, instances and types."""
    from Autodesk.Revit.DB import FilteredElementCollector
    out = {}
    for collector in (FilteredElementCollector(doc).WhereElementIsNotElementType(),
                      FilteredElementCollector(doc).WhereElementIsElementType()):
        for el in collector:
            out[id_value(el.Id)] = element_state(el)
    return out


def differences(before, after, limit=10):
    """What differs between two states, in words; empty when they are equal."""
    out = []
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(i for i in set(before) & set(after) if before[i] != after[i])
    if added:
        out.append("still present after the rollback: %s" % ", ".join("#%d" % i for i in added[:limit]))
    if gone:
        out.append("missing after the rollback: %s" % ", ".join("#%d" % i for i in gone[:limit]))
    if changed:
        out.append("not restored: %s" % ", ".join("#%d (%s)" % (i, after[i][1]) for i in changed[:limit]))
    return out
