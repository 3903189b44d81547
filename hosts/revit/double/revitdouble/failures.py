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
    """Overlaps of the walls the transaction added or modified with the
    walls on their line: an index of walls by level and line (kept by
    change, as Revit keeps its own spatial data) gives the candidates, so the
    check costs by the walls touched."""
    from .walls import Wall
    added, modified, deleted = diff
    index = _LineIndex.of(doc)
    for i in list(added) + list(modified) + list(deleted):
        index.refresh(doc, i)
    touched = [doc._elements.get(i) for i in sorted(set(added) | set(modified))]
    out, seen = [], set()
    for a in touched:
        if not isinstance(a, Wall):
            continue
        for j in sorted(index.buckets.get(index.key_of[a._id][0], ())):
            b = doc._elements.get(j)
            pair = (min(a._id, j), max(a._id, j))
            if b is a or b is None or pair in seen:
                continue
            seen.add(pair)
            if _overlap(a, b):
                first, second = sorted((a, b), key=lambda w: w._id)
                out.append((FailureSeverity.Warning, OVERLAP_WARNING, [first.Id, second.Id]))
    return out


class _LineIndex:
    """Walls by _line_key. Kept current from each commit's diff and from the
    ids a rollback restored (Document._restored), which are the only ways a
    wall's line changes."""

    def __init__(self):
        self.key_of = {}
        self.buckets = {}

    @staticmethod
    def of(doc):
        from .walls import Wall
        index = doc.__dict__.get("_line_index")
        if index is None:
            index = doc._line_index = _LineIndex()
            for e in doc._elements.values():
                if isinstance(e, Wall):
                    index.put(e)
            doc._restored.clear()
        for i in list(doc._restored):
            index.refresh(doc, i)
        doc._restored.clear()
        return index

    def put(self, w):
        self.drop(w._id)
        key = _line_key(w)
        self.key_of[w._id] = (key, w._data["curve"], w._data["level"])
        self.buckets.setdefault(key, set()).add(w._id)

    def drop(self, i):
        old = self.key_of.pop(i, None)
        if old is not None:
            self.buckets.get(old[0], set()).discard(i)

    def refresh(self, doc, i):
        from .walls import Wall
        e = doc._elements.get(i)
        if not isinstance(e, Wall):
            self.drop(i)
            return
        cached = self.key_of.get(i)
        if cached is None or cached[1] is not e._data["curve"] or cached[2] != e._data["level"]:
            self.put(e)


def _line_key(w):
    """The level and the infinite line a wall runs on, rounded: collinear
    walls share it. From the curve's end points, without the API's objects."""
    c = w._data["curve"]
    a, b = c.GetEndPoint(0), c.GetEndPoint(1)
    dx, dy = b.X - a.X, b.Y - a.Y
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    dx, dy = dx / length, dy / length
    if (dx, dy) < (0, 0):
        dx, dy = -dx, -dy
    return (w._data["level"], round(dx, 4), round(dy, 4), round(a.X * dy - a.Y * dx, 3))


def _overlap(a, b):
    """Whether two walls on one level run along the same line and share more
    than a point of it; in plain numbers, as the double's own work (no API
    objects, no counted calls)."""
    if a._data["level"] != b._data["level"]:
        return False
    ca, cb = a._data["curve"], b._data["curve"]
    (ax, ay, az), (bx, by, bz) = _xyz(ca.GetEndPoint(0)), _xyz(ca.GetEndPoint(1))
    (cx, cy, cz), (ex, ey, ez) = _xyz(cb.GetEndPoint(0)), _xyz(cb.GetEndPoint(1))
    length = ((bx - ax) ** 2 + (by - ay) ** 2 + (bz - az) ** 2) ** 0.5
    other = ((ex - cx) ** 2 + (ey - cy) ** 2 + (ez - cz) ** 2) ** 0.5
    if length == 0 or other == 0:
        return False
    ux, uy, uz = (bx - ax) / length, (by - ay) / length, (bz - az) / length
    if abs(abs(ux * (ex - cx) + uy * (ey - cy) + uz * (ez - cz)) / other - 1.0) > 1e-6:
        return False
    ox, oy, oz = cx - ax, cy - ay, cz - az
    t0 = ox * ux + oy * uy + oz * uz
    if ((ox - ux * t0) ** 2 + (oy - uy * t0) ** 2 + (oz - uz * t0) ** 2) ** 0.5 > 1e-6:
        return False
    t1 = (ex - ax) * ux + (ey - ay) * uy + (ez - az) * uz
    lo, hi = min(t0, t1), max(t0, t1)
    return min(length, hi) - max(0.0, lo) > 1e-6


def _xyz(p):
    return p._x, p._y, p._z
