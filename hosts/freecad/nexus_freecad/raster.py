"""Headless rendering: a rasteriser of the document's solids with flat
shading, a z-buffer and outlines, for freecadcmd, which has no renderer."""

import math

from hostkit.imagefit import MIN_PX, fit_image
from hostkit.png import encode_png
from nexus_freecad.elements import category_of, renderable

CATEGORY_COLOURS = {
    "Wall": (205, 190, 170),
    "Door": (150, 95, 50),
    "Window": (120, 180, 230),
    "Structure": (160, 160, 170),
    "Floor": (190, 200, 180),
    "Roof": (180, 90, 80),
}
DEFAULT_COLOUR = (170, 175, 200)
BACKGROUND = (255, 255, 255)
EDGE_COLOUR = (40, 40, 40)


def _camera(view):
    if view == "plan":
        return (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -1.0)
    if view == "front":
        return (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0)
    # Isometric, looking from (1, -1, 1) towards the origin as FreeCAD does.
    d = (-1.0, 1.0, -1.0)
    n = math.sqrt(3.0)
    d = (d[0] / n, d[1] / n, d[2] / n)
    right = (1.0 / math.sqrt(2.0), 1.0 / math.sqrt(2.0), 0.0)
    up = (right[1] * d[2] - right[2] * d[1], right[2] * d[0] - right[0] * d[2], right[0] * d[1] - right[1] * d[0])
    return right, up, d



def render_headless(doc, view, rule, window=None):
    """Rasterises the document's solids with flat shading and a z-buffer.

    window, a world bounding box, frames that region (everything is drawn,
    what lies outside is cut off); otherwise the whole document is framed.
    """
    import numpy as np

    right, up, depth_dir = _camera(view)
    basis = np.array([right, up, depth_dir], dtype=float)
    light = np.array([0.3, -0.5, 0.8])
    light = light / np.linalg.norm(light)
    meshes = []
    edges = []
    for obj in doc.Objects:
        if not renderable(obj):
            continue
        try:
            shape = obj.Shape.copy()
            try:
                glob = obj.getGlobalPlacement()
                if not glob.isSame(obj.Placement):
                    shape.Placement = glob.multiply(obj.Placement.inverse()).multiply(shape.Placement)
            except Exception:
                pass
            bb = shape.BoundBox
            tol = max(bb.DiagonalLength / 100.0, 0.01)
            points, triangles = shape.tessellate(tol)
        except Exception:
            continue
        if not triangles:
            continue
        pts = np.array([(p.x, p.y, p.z) for p in points], dtype=float)
        tris = np.array(triangles, dtype=np.int64)
        colour = np.array(CATEGORY_COLOURS.get(category_of(obj), DEFAULT_COLOUR), dtype=float)
        meshes.append((pts, tris, colour))
        for edge in shape.Edges:
            try:
                edges.append(np.array([(p.x, p.y, p.z) for p in edge.discretize(Deflection=tol)], dtype=float))
            except Exception:
                continue
    max_px = rule.max_px
    if not meshes:
        width, height = fit_image(max_px, max(MIN_PX, int(max_px * 0.75)), rule)
        rows = [bytes(BACKGROUND) * width for _ in range(height)]
        return encode_png(width, height, rows), width, height

    projected = [(pts @ basis.T, tris, colour, pts) for pts, tris, colour in meshes]
    if window is not None:
        corners = np.array([(x, y, z) for x in (window.XMin, window.XMax) for y in (window.YMin, window.YMax)
                            for z in (window.ZMin, window.ZMax)], dtype=float) @ basis.T
        allxy = corners[:, :2]
    else:
        allxy = np.vstack([p[0][:, :2] for p in projected])
    lo = allxy.min(axis=0)
    hi = allxy.max(axis=0)
    span = np.maximum(hi - lo, 1e-6)
    margin = 0.05
    scale = (max_px * (1 - 2 * margin)) / max(span[0], span[1])
    # The epsilon keeps float error from adding a pixel to a side that
    # lands exactly on a whole number.
    width = max(MIN_PX, int(math.ceil(span[0] * scale / (1 - 2 * margin) - 1e-6)))
    height = max(MIN_PX, int(math.ceil(span[1] * scale / (1 - 2 * margin) - 1e-6)))
    width = min(width, max_px)
    height = min(height, max_px)
    fitted_w, fitted_h = fit_image(width, height, rule)
    if (fitted_w, fitted_h) != (width, height):
        scale *= float(fitted_w) / width
        width, height = fitted_w, fitted_h
    offset = np.array([(width - span[0] * scale) / 2.0, (height - span[1] * scale) / 2.0])

    def to_screen(p):
        s = np.empty_like(p)
        s[:, 0] = (p[:, 0] - lo[0]) * scale + offset[0]
        s[:, 1] = height - ((p[:, 1] - lo[1]) * scale + offset[1])
        s[:, 2] = p[:, 2]
        return s

    zbuf = np.full((height, width), np.inf)
    img = np.empty((height, width, 3), dtype=float)
    img[:, :] = BACKGROUND
    for proj, tris, colour, world in projected:
        scr = to_screen(proj)
        for tri in tris:
            a, b, c = scr[tri[0]], scr[tri[1]], scr[tri[2]]
            wa, wb, wc = world[tri[0]], world[tri[1]], world[tri[2]]
            normal = np.cross(wb - wa, wc - wa)
            nlen = np.linalg.norm(normal)
            if nlen == 0:
                continue
            shade = 0.45 + 0.55 * abs(float(np.dot(normal / nlen, light)))
            x0 = max(int(math.floor(min(a[0], b[0], c[0]))), 0)
            x1 = min(int(math.ceil(max(a[0], b[0], c[0]))), width - 1)
            y0 = max(int(math.floor(min(a[1], b[1], c[1]))), 0)
            y1 = min(int(math.ceil(max(a[1], b[1], c[1]))), height - 1)
            if x0 > x1 or y0 > y1:
                continue
            area = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
            if abs(area) < 1e-12:
                continue
            xs, ys = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
            w0 = ((b[0] - xs) * (c[1] - ys) - (b[1] - ys) * (c[0] - xs)) / area
            w1 = ((c[0] - xs) * (a[1] - ys) - (c[1] - ys) * (a[0] - xs)) / area
            w2 = 1.0 - w0 - w1
            inside = (w0 >= -1e-9) & (w1 >= -1e-9) & (w2 >= -1e-9)
            if not inside.any():
                continue
            z = w0 * a[2] + w1 * b[2] + w2 * c[2]
            region = zbuf[y0:y1 + 1, x0:x1 + 1]
            closer = inside & (z < region)
            region[closer] = z[closer]
            img[y0:y1 + 1, x0:x1 + 1][closer] = colour * shade
    # Outlines: shape edges drawn where they are not hidden behind a face.
    bias = max(span[0], span[1]) / 200.0
    for pts in edges:
        scr = to_screen(pts @ basis.T)
        for i in range(len(scr) - 1):
            p, q = scr[i], scr[i + 1]
            steps = int(max(abs(q[0] - p[0]), abs(q[1] - p[1]))) + 1
            t = np.linspace(0.0, 1.0, steps + 1)
            xs = (p[0] + (q[0] - p[0]) * t).astype(int)
            ys = (p[1] + (q[1] - p[1]) * t).astype(int)
            zs = p[2] + (q[2] - p[2]) * t
            ok = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
            xs, ys, zs = xs[ok], ys[ok], zs[ok]
            visible = zs <= zbuf[ys, xs] + bias
            img[ys[visible], xs[visible]] = EDGE_COLOUR
    data = np.clip(img, 0, 255).astype(np.uint8)
    rows = [data[y].tobytes() for y in range(height)]
    return encode_png(width, height, rows), width, height
