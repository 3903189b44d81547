# The corpus's own view of a document, independent of the runtime's change
# tracking: every object with its name, id, label, type, proxy type, state and
# every property value at full precision, shapes reduced to a digest of their
# geometry (type, counts, measures, bounding box and every vertex). Run
# read-only; prints one JSON object keyed by object name.
import hashlib
import json

import FreeCAD as App
import Part


def _num(x):
    return repr(float(x))


def _shape(s):
    if s.isNull():
        return "shape:null"
    parts = [s.ShapeType, len(s.Vertexes), len(s.Edges), len(s.Faces), len(s.Solids)]
    for measure in ("Volume", "Area", "Length"):
        try:
            parts.append(_num(getattr(s, measure)))
        except Exception:
            parts.append("-")
    b = s.BoundBox
    box = ",".join(_num(v) for v in (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax))
    points = ";".join(",".join(_num(c) for c in v.Point) for v in s.Vertexes)
    digest = hashlib.sha256(("%s|%s|%s" % (parts, box, points)).encode()).hexdigest()[:16]
    return "shape:%s:box(%s):%s" % (s.ShapeType, box, digest)


def _value(v):
    if isinstance(v, Part.Shape):
        return _shape(v)
    if isinstance(v, App.DocumentObject):
        return "obj:" + v.Name
    if isinstance(v, App.Placement):
        return "placement:" + ",".join(_num(c) for c in tuple(v.Base) + tuple(v.Rotation.Q))
    if isinstance(v, App.Vector):
        return "vector:" + ",".join(_num(c) for c in v)
    if isinstance(v, App.Rotation):
        return "rotation:" + ",".join(_num(c) for c in v.Q)
    if isinstance(v, App.Matrix):
        return "matrix:" + ",".join(_num(c) for c in v.A)
    if isinstance(v, App.Units.Quantity):
        return "quantity:%s %s" % (_num(v.Value), v.Unit.Signature)
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    r = repr(v)
    return r if " at 0x" not in r else type(v).__name__


def dump(doc):
    out = {}
    for o in doc.Objects:
        props = {}
        for p in o.PropertiesList:
            if p == "Proxy":
                continue
            try:
                props[p] = _value(o.getPropertyByName(p))
            except Exception as exc:
                props[p] = "error:" + type(exc).__name__
        proxy = getattr(o, "Proxy", None)
        out[o.Name] = {"id": getattr(o, "ID", 0), "label": o.Label, "type": o.TypeId,
                       "proxy": str(getattr(proxy, "Type", "") or "") if proxy is not None else "",
                       "state": sorted(str(s) for s in o.State), "props": props}
    return out


print(json.dumps(dump(App.ActiveDocument), sort_keys=True))
