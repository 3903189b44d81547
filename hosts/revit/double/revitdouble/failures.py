"""The failures a commit posts, as Revit's failure processing does. The
double models one warning people meet in the article's kind of work: walls on
the same level that overlap along their lines."""
from .transactions import FailureSeverity

OVERLAP_WARNING = ("Highlighted walls overlap. One of them may be ignored when Revit finds room boundaries. "
                   "Use Cut Geometry to embed one wall within the other.")


def model_failures(doc, diff):
    from .walls import Wall
    added, modified, _ = diff
    touched = set(added) | set(modified)
    walls = [e for e in doc._elements.values() if isinstance(e, Wall)]
    out = []
    for i, a in enumerate(walls):
        for b in walls[i + 1:]:
            if (a._id in touched or b._id in touched) and _overlap(a, b):
                out.append((FailureSeverity.Warning, OVERLAP_WARNING, [a.Id, b.Id]))
    return out


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
