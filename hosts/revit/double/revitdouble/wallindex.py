"""Walls by level, by the axis they run along and by band, for rooms: a
room's bounds are the nearest wall on each side of its point that spans it
(rooms._bounds), and the index answers that from the walls of the point's
band on the point's level, so reading a room's Area, Perimeter or boundary
costs the same in a project of 100,000 elements as in one of 1,000. It is
kept current from the ids the document marks as changed (Document._changed:
every change of an element's data, each element added, deleted, seeded or
put back by a rollback), as Revit keeps its own spatial data by change."""
import bisect
import math

# Feet of the other axis a band covers: a wall is listed in every band its
# span crosses, one spanning more than LONG bands in its level's long list.
BAND = 20.0
LONG = 4096
ALONG_X, ALONG_Y = "x", "y"


class WallIndex:
    def __init__(self):
        # Wall id -> (level, axis, coordinate, lo, hi, keys, curve).
        self.entry = {}
        # (level, axis, band or "long") -> sorted [(coordinate, wall id)].
        self.lines = {}
        # Walls a query looked at, so a test can see the cost stays flat.
        self.examined = 0

    @staticmethod
    def of(doc):
        index = doc.__dict__.get("_wall_index")
        if index is None:
            index = doc._wall_index = WallIndex()
            ids = list(doc._elements)
        else:
            ids = list(doc._changed)
        doc._changed.clear()
        for i in ids:
            index.refresh(doc, i)
        return index

    def refresh(self, doc, i):
        from .walls import Wall
        e = doc._elements.get(i)
        if not isinstance(e, Wall):
            self.drop(i)
            return
        old = self.entry.get(i)
        if old is not None and old[6] is e._data["curve"] and old[0] == e._data["level"]:
            return
        self.drop(i)
        self.put(e)

    def put(self, w):
        """A wall that runs along X or Y (its ends on a line parallel to an
        axis, as rooms._bounds reads it); any other bounds no room here."""
        c, level = w._data["curve"], w._data["level"]
        a, b = c.GetEndPoint(0), c.GetEndPoint(1)
        if abs(a.X - b.X) < 1e-6:
            # Along Y, at x = a.X: it bounds rooms west or east of it.
            axis, coord, lo, hi = ALONG_Y, a.X, min(a.Y, b.Y), max(a.Y, b.Y)
        elif abs(a.Y - b.Y) < 1e-6:
            axis, coord, lo, hi = ALONG_X, a.Y, min(a.X, b.X), max(a.X, b.X)
        else:
            return
        first, last = math.floor(lo / BAND), math.floor(hi / BAND)
        bands = range(first, last + 1) if last - first < LONG else ("long",)
        keys = tuple((level, axis, k) for k in bands)
        for key in keys:
            bisect.insort(self.lines.setdefault(key, []), (coord, w._id))
        self.entry[w._id] = (level, axis, coord, lo, hi, keys, c)

    def drop(self, i):
        old = self.entry.pop(i, None)
        if old is None:
            return
        for key in old[5]:
            line = self.lines[key]
            line.pop(bisect.bisect_left(line, (old[2], i)))

    def nearest(self, doc, level, axis, at, along, side):
        """The wall on level running along axis nearest to coordinate at on
        side (-1: lower coordinates, +1: higher), whose span holds along:
        (wall, its coordinate, half its width), or None. Of walls on one
        line, the lowest id."""
        best = None
        for key in ((level, axis, math.floor(along / BAND)), (level, axis, "long")):
            found = self._scan(self.lines.get(key, ()), at, along, side)
            if found is not None and (best is None or side * (found[0] - best[0]) < 0
                                      or found[0] == best[0] and found[1] < best[1]):
                best = found
        if best is None:
            return None
        w = doc._elements[best[1]]
        return w, best[0], w.Width / 2.0

    def _scan(self, line, at, along, side):
        if side < 0:
            steps = range(bisect.bisect_left(line, (at,)) - 1, -1, -1)
        else:
            steps = range(bisect.bisect_right(line, (at, math.inf)), len(line))
        found = None
        for j in steps:
            coord, i = line[j]
            if found is not None and coord != found[0]:
                break
            self.examined += 1
            _, _, _, lo, hi, _, _ = self.entry[i]
            if lo <= along <= hi and (found is None or i < found[1]):
                found = (coord, i)
        return found
