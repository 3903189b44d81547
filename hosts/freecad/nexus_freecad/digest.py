"""What a document holds, as values: every object's type, label, state and
the value of each of its properties, read before a script runs. Comparing it
with the document afterwards says what a transaction changed (a value that
differs, never a property merely set) and whether a rollback left the
document exactly as before; the values themselves restore what undo did not.

Values are read, not serialised: FreeCAD answers copies (vectors,
placements, lists), shapes are handles on immutable geometry, so holding
them costs little and comparing two is equality, with a geometric key only
for two shapes that are not the same handle."""

import FreeCAD as App
import Part

# Properties whose value is the object's Python implementation, not data.
_SKIPPED = frozenset(("Proxy",))
_UNREADABLE = object()


class ObjectRef(object):
    """A link to a document object, kept by name: the value survives the
    object (and a reload of its document) and restores to whatever object
    holds that name then."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, ObjectRef) and other.name == self.name

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "obj:" + self.name


def _freeze(v):
    if isinstance(v, App.DocumentObject):
        return ObjectRef(v.Name)
    if isinstance(v, (list, tuple)) and any(isinstance(x, (App.DocumentObject, list, tuple)) for x in v):
        return type(v)(_freeze(x) for x in v)
    return v


def _thaw(v, doc):
    if isinstance(v, ObjectRef):
        return doc.getObject(v.name)
    if isinstance(v, (list, tuple)) and any(isinstance(x, (ObjectRef, list, tuple)) for x in v):
        return type(v)(_thaw(x, doc) for x in v)
    return v


def state_of(obj):
    """An object's state (Touched, Invalid, ...), in FreeCAD's own order."""
    return tuple(obj.State)


class ObjectValues(object):
    __slots__ = ("type", "label", "state", "props", "info")

    def __init__(self, obj):
        self.type = obj.TypeId
        self.label = obj.Label
        self.state = state_of(obj)
        props = {}
        for p in obj.PropertiesList:
            if p in _SKIPPED:
                continue
            try:
                props[p] = _freeze(obj.getPropertyByName(p))
            except Exception:
                props[p] = _UNREADABLE
        self.props = props
        proxy = getattr(obj, "Proxy", None)
        self.info = {"label": self.label, "typeId": self.type, "ifcType": str(props.get("IfcType", "") or ""),
                     "proxyType": str(getattr(proxy, "Type", "") or "") if proxy is not None else ""}


def capture(doc):
    """Every object of doc by name, as values."""
    return {o.Name: ObjectValues(o) for o in doc.Objects}


def _num(x):
    # Full precision: a value that differs in its last digit differs.
    return float(x)


def _shape_key(s):
    b = s.BoundBox
    key = [s.ShapeType, len(s.Solids), len(s.Faces), len(s.Edges),
           tuple(_num(v) for v in (b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)),
           tuple(_num(v) for v in s.Placement.toMatrix().A)]
    for measure in ("Volume", "Area", "Length"):
        try:
            key.append(_num(getattr(s, measure)))
        except Exception:
            key.append(None)
    key.append(tuple(tuple(_num(c) for c in v.Point) for v in s.Vertexes))
    return key


def _same_shape(a, b):
    try:
        if a.isNull() or b.isNull():
            return a.isNull() and b.isNull()
        # The same handle is the same geometry; a recompute that made the
        # same geometry anew is compared by what it is.
        return a.isEqual(b) or _shape_key(a) == _shape_key(b)
    except Exception:
        return False


def same(a, b):
    """Whether two property values are the same value."""
    if a is b:
        return True
    if isinstance(a, Part.Shape) and isinstance(b, Part.Shape):
        return _same_shape(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    try:
        if a == b:
            return True
    except Exception:
        pass
    ra, rb = repr(a), repr(b)
    if " at 0x" in ra:
        # An opaque value with no equality of its own: only its type is known.
        return True
    return ra == rb


def differing(before, after, with_state, new_props=True):
    """Names of what differs of one object: "TypeId", "Label", "State" (when
    with_state) and the properties whose values differ (with new_props
    False, not those only after holds)."""
    out = []
    if before.type != after.type:
        out.append("TypeId")
    if before.label != after.label:
        out.append("Label")
    if with_state and before.state != after.state:
        out.append("State")
    for p in sorted(set(before.props) | set(after.props)):
        if p == "Label":
            continue
        if not new_props and p not in before.props:
            continue
        a, b = before.props.get(p, _UNREADABLE), after.props.get(p, _UNREADABLE)
        if a is _UNREADABLE or b is _UNREADABLE:
            if a is not b:
                out.append(p)
        elif not same(a, b):
            out.append(p)
    return out


def compare(before, after, names=None, with_state=True, new_props=True):
    """What differs between two captures: {name: [what differs]} for the
    objects in both (only names, when given), "(missing)" for an object of
    before that after lacks and "(new)" for one after holds alone. With
    new_props False, properties only after holds are left out: a document
    reloaded from its file gains those its objects' restore code adds."""
    out = {}
    for name in (before.keys() | after.keys()) if names is None else names:
        b, a = before.get(name), after.get(name)
        if b is None and a is None:
            continue
        if a is None:
            out[name] = ["(missing)"]
        elif b is None:
            out[name] = ["(new)"]
        else:
            what = differing(b, a, with_state, new_props)
            if what:
                out[name] = what
    return out


def restore(doc, before, differences):
    """Sets back what differs of objects that are still there: the values
    first, then the state (Touched set or cleared). Answers the objects it
    could not set back entirely."""
    failed = set()
    for name, what in sorted(differences.items()):
        obj = doc.getObject(name)
        if obj is None or name not in before or "TypeId" in what:
            failed.add(name)
            continue
        values = before[name]
        for p in what:
            if p in ("State", "(missing)", "(new)"):
                continue
            props = getattr(values, "props", None)
            if props is None or (p != "Label" and p not in props):
                failed.add(name)
                continue
            try:
                setattr(obj, p, values.label if p == "Label" else _thaw(props[p], doc))
            except Exception:
                failed.add(name)
    for name in sorted(differences):
        obj = doc.getObject(name)
        if obj is None or name not in before:
            continue
        touched = "Touched" in before[name].state
        try:
            now = "Touched" in obj.State
            if touched and not now:
                obj.touch()
            elif now and not touched:
                obj.purgeTouched()
        except Exception:
            failed.add(name)
    return sorted(failed)


def describe(differences, limit=20):
    """The differences as the result names them: "Line: End, State"."""
    items = ["%s: %s" % (name, ", ".join(what)) for name, what in sorted(differences.items())]
    if len(items) > limit:
        items = items[:limit] + ["and %d more object(s)" % (len(items) - limit)]
    return items
