"""The failures a commit posts, as Revit's failure processing does. The
double models one warning people meet in the article's kind of work: walls on
the same level that overlap along their lines."""
from .transactions import FailureSeverity

OVERLAP_WARNING = ("Highlighted walls overlap. One of them may be ignored when Revit finds room boundaries. "
                   "Use Cut Geometry to embed one wall within the other.")


def model_failures(doc, diff):
    """Overlaps of the walls the transaction added or modified with the
    walls on their line: walls are grouped by level and line first, so the
    check costs by the walls touched, as Revit's own does."""
    from .walls import Wall
    from .worksharing import ownership_failures
    return ownership_failures(doc, diff) + _overlaps(doc, diff)


def _overlaps(doc, diff):
    from .walls import Wall
    added, modified, _ = diff
    touched = [doc._elements.get(i) for i in sorted(set(added) | set(modified))]
    touched = [w for w in touched if isinstance(w, Wall)]
    if not touched:
        return []
    lines = {}
    for e in doc._elements.values():
        if isinstance(e, Wall):
            lines.setdefault(_line_key(e), []).append(e)
    out, seen = [], set()
    for a in touched:
        for b in lines.get(_line_key(a), ()):
            pair = (min(a._id, b._id), max(a._id, b._id))
            if b is a or pair in seen:
                continue
            seen.add(pair)
            if _overlap(a, b):
                first, second = sorted((a, b), key=lambda w: w._id)
                out.append((FailureSeverity.Warning, OVERLAP_WARNING, [first.Id, second.Id]))
    return out


def _line_key(w):
    """The level and the infinite line a wall runs on, rounded: collinear
    walls share it."""
    c = w._data["curve"]
    d = c.Direction
    dx, dy = (d.X, d.Y) if (d.X, d.Y) > (0, 0) else (-d.X, -d.Y)
    p = c.GetEndPoint(0)
    return (w._data["level"], round(dx, 4), round(dy, 4), round(p.X * dy - p.Y * dx, 3))


def _overlap(a, b):
    if a._data["level"] != b._data["level"]:
        return False
    ca, cb = a._data["curve"], b._data["curve"]
    d = ca.Direction
    if abs(abs(d.DotProduct(cb.Direction)) - 1.0) > 1e-6:
        return False
    a0 = ca.GetEndPoint(0)
    off = cb.GetEndPoint(0).Subtract(a0)
    if off.Subtract(d.Multiply(off.DotProduct(d))).GetLength() > 1e-6:
        return False
    s = sorted((off.DotProduct(d), cb.GetEndPoint(1).Subtract(a0).DotProduct(d)))
    return min(ca.Length, s[1]) - max(0.0, s[0]) > 1e-6
