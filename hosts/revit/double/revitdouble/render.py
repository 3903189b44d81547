"""Draws a view of the double's document: each model element as a box, a
plan from above, a 3D view in isometric, painter's order, flat shading."""
import math

from .geometry import union

_BG = (250, 250, 248)
_COLOURS = {"Walls": (176, 170, 160), "Doors": (150, 96, 52), "Windows": (90, 150, 200), "Floors": (200, 200, 190)}
_OTHER = (140, 160, 140)


def _elements(doc, view):
    from .views import ViewType
    out = []
    for e in doc._elements.values():
        if e.Category is None or e.Category.Name in ("Views", "Levels") or e._data.get("view", -1) != -1:
            # Views, levels and what a view owns (tags, title blocks, viewports) are not drawn as model.
            continue
        box = e.get_BoundingBox(None)
        if box is None:
            continue
        if view.ViewType == ViewType.FloorPlan and e._data.get("level") != view._data.get("level"):
            continue
        out.append((e, box))
    return out


def _clip(items, view):
    from .views import View3D
    region = None
    if isinstance(view, View3D) and view.IsSectionBoxActive:
        region = view.GetSectionBox()
    elif view.CropBoxActive:
        region = view.CropBox
    if region is None:
        return items, union([b for _, b in items])
    keep = [(e, b) for e, b in items if b.Max.X >= region.Min.X and b.Min.X <= region.Max.X and
            b.Max.Y >= region.Min.Y and b.Min.Y <= region.Max.Y]
    return keep, region


def _project(view, p):
    from .views import ViewType
    if view.ViewType == ViewType.FloorPlan:
        return p.X, -p.Y, p.Z
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    return (p.X - p.Y) * c, -((p.X + p.Y) * s + p.Z), p.X + p.Y - p.Z


def render_view(doc, view, size, vertical):
    from .geometry import XYZ
    items, region = _clip(_elements(doc, view), view)
    if region is None:
        from .geometry import BoundingBoxXYZ
        region = BoundingBoxXYZ(XYZ(0, 0, 0), XYZ(10, 10, 10))
    corners = [XYZ(x, y, z) for x in (region.Min.X, region.Max.X) for y in (region.Min.Y, region.Max.Y)
               for z in (region.Min.Z, region.Max.Z)]
    pts = [_project(view, p) for p in corners]
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    w, h = max(x1 - x0, 1e-6), max(y1 - y0, 1e-6)
    if vertical:
        height, width = size, max(1, int(round(size * w / h)))
    else:
        width, height = size, max(1, int(round(size * h / w)))
    sx, sy = (width - 1) / w, (height - 1) / h
    rows = [bytearray(_BG * width) for _ in range(height)]
    faces = []
    for e, b in items:
        colour = _COLOURS.get(e.Category.Name, _OTHER)
        for quad, shade in _faces(b):
            proj = [_project(view, p) for p in quad]
            depth = sum(p[2] for p in proj) / 4.0
            poly = [((p[0] - x0) * sx, (p[1] - y0) * sy) for p in proj]
            faces.append((depth, poly, tuple(int(c * shade) for c in colour)))
    faces.sort(key=lambda f: -f[0])
    for _, poly, colour in faces:
        _fill(rows, width, height, poly, colour)
    return width, height, rows


def _faces(b):
    from .geometry import XYZ
    (ax, ay, az), (bx, by, bz) = (b.Min.X, b.Min.Y, b.Min.Z), (b.Max.X, b.Max.Y, b.Max.Z)
    p = lambda x, y, z: XYZ(x, y, z)
    return [
        ([p(ax, ay, bz), p(bx, ay, bz), p(bx, by, bz), p(ax, by, bz)], 1.0),
        ([p(ax, ay, az), p(bx, ay, az), p(bx, ay, bz), p(ax, ay, bz)], 0.8),
        ([p(ax, ay, az), p(ax, by, az), p(ax, by, bz), p(ax, ay, bz)], 0.65),
        ([p(bx, ay, az), p(bx, by, az), p(bx, by, bz), p(bx, ay, bz)], 0.7),
        ([p(ax, by, az), p(bx, by, az), p(bx, by, bz), p(ax, by, bz)], 0.75),
    ]


def _fill(rows, width, height, poly, colour):
    ys = [p[1] for p in poly]
    top, bottom = max(0, int(math.floor(min(ys)))), min(height - 1, int(math.ceil(max(ys))))
    n = len(poly)
    for y in range(top, bottom + 1):
        yc = y + 0.5
        xs = []
        for i in range(n):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % n]
            if (y1 <= yc < y2) or (y2 <= yc < y1):
                xs.append(x1 + (yc - y1) * (x2 - x1) / (y2 - y1))
        xs.sort()
        row = rows[y]
        for i in range(0, len(xs) - 1, 2):
            a, b = max(0, int(math.ceil(xs[i] - 0.5))), min(width - 1, int(math.floor(xs[i + 1] - 0.5)))
            if b >= a:
                row[a * 3:(b + 1) * 3] = bytes(colour) * (b - a + 1)
        if len(xs) < 2:
            # A face seen edge-on: draw the line it makes.
            x = int(min(p[0] for p in poly))
            if 0 <= x < width:
                row[x * 3:x * 3 + 3] = bytes(colour)
