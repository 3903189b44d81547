"""An element's state read through the API, as values: its id, class, name,
category, type, level, location and parameter values. Two equal states are
the same element as the API sees it. The mirror (mirror.py) holds every
element's; a rollback is held to the states from before the script
(verified, not assumed), and what a transaction changed is what differs by
value (an element DocumentChanged names whose every value is as before is no
change)."""
from nexus_revit.ids import element_id, id_value

# What each field of an element's state is called when it differs.
_FIELDS = ("Class", "Name", "Category", "Type", "Level", "Location")
# Values Revit keeps as members, not parameters: whether a type is active,
# an element pinned, a wall or door flipped, what hosts a door, a view's
# crop and section box, a level's elevation, a model line's curve, a
# reference plane's ends. Read where the element has them.
_MEMBERS = ("IsActive", "Pinned", "Flipped", "FacingFlipped", "HandFlipped", "Host", "CropBox", "CropBoxActive",
            "IsSectionBoxActive", "Elevation", "Width", "GeometryCurve", "BubbleEnd", "FreeEnd")


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


def _value(v):
    """A member's value as a comparable one: points and boxes by their
    coordinates, curves by their ends, elements by id."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return round(v, 9) if isinstance(v, float) else v
    if all(hasattr(v, a) for a in ("X", "Y", "Z")):
        return (round(v.X, 9), round(v.Y, 9), round(v.Z, 9))
    if hasattr(v, "Min") and hasattr(v, "Max"):
        return ("box", _value(v.Min), _value(v.Max))
    if hasattr(v, "GetEndPoint"):
        return ("curve", _value(v.GetEndPoint(0)), _value(v.GetEndPoint(1)))
    if hasattr(v, "Id"):
        return ("element", id_value(v.Id))
    return str(v)


def _members(el):
    out = []
    find_inserts = getattr(el, "FindInserts", None)
    if find_inserts is not None:
        # A wall's doors and windows: a door placed in it changes the wall.
        out.append(("Inserts", tuple(sorted(id_value(i) for i in find_inserts(True, True, True, True)))))
    for name in _MEMBERS:
        try:
            v = getattr(el, name)
        except AttributeError:
            continue
        except Exception as exc:  # a member that cannot be read is part of the state too
            v = "error:%s" % type(exc).__name__
        out.append((name, _value(v)))
    return tuple(out)


def element_state(el):
    from Autodesk.Revit.DB import ElementType
    cat = el.Category
    return (el.GetType().Name, el.Name, cat.Name if cat is not None else "", id_value(el.GetTypeId()),
            id_value(el.LevelId), _loc(el), _params(el) + _members(el), isinstance(el, ElementType))


def differing(a, b):
    """What differs between two states of one element: field names and the
    names of the parameters whose values differ."""
    out = [name for name, x, y in zip(_FIELDS, a[:6], b[:6]) if x != y]
    if a[7] != b[7]:
        out.append("Class")
    pa, pb = {}, {}
    for name, value in a[6]:
        pa.setdefault(name, []).append(value)
    for name, value in b[6]:
        pb.setdefault(name, []).append(value)
    out.extend(sorted(n for n in set(pa) | set(pb) if pa.get(n) != pb.get(n)))
    return out


def _named(i, s):
    """#id Category "name" from a state."""
    words = ["#%d" % i]
    if s[2]:
        words.append(s[2])
    elif s[0]:
        words.append(s[0])
    if s[1]:
        words.append('"%s"' % s[1])
    return " ".join(words)


def differences(before, after, limit=10):
    """What differs between two states, in words naming each element and
    what of it differs; empty when they are equal."""
    out = []
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(i for i in set(before) & set(after) if before[i] != after[i])
    if added:
        out.append("still present after the rollback: %s" % ", ".join(_named(i, after[i]) for i in added[:limit]))
    if gone:
        out.append("missing after the rollback: %s" % ", ".join(_named(i, before[i]) for i in gone[:limit]))
    if changed:
        out.append("not restored: %s" % "; ".join(
            "%s: %s" % (_named(i, after[i]), ", ".join(differing(before[i], after[i]))) for i in changed[:limit]))
    for ids in (added, gone, changed):
        if len(ids) > limit:
            out.append("and %d more element(s)" % (len(ids) - limit))
    return out


def _ordered(ids):
    seen, out = set(), []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _info(doc, before, i):
    """What the report says of an element the transaction deleted, read from
    the state before it: Revit cannot describe it once it is gone."""
    s = before[i]
    family, type_name = "", ""
    type_state = before.get(s[3])
    if type_state is not None:
        type_name = type_state[1]
        el_type = doc.GetElement(element_id(s[3]))
        family = (getattr(el_type, "FamilyName", "") or "") if el_type is not None else ""
    level = before.get(s[4])
    return {"class": s[0], "isType": s[7], "label": s[1], "category": s[2],
            "type": ("%s: %s" % (family, type_name)) if family else type_name,
            "level": level[1] if level is not None else ""}


def value_changes(before, doc, ids, current):
    """What a transaction changed, by value: the ids DocumentChanged named,
    held to the state before the transaction (before: a mapping of id to
    state) and the states now (current, the mirror's, which DocumentChanged
    has just re-read for those ids). Added are elements that are there and
    were not; deleted, elements that were and are not; modified, elements
    some value of which differs (the parameters named). An element created
    and deleted in one transaction is neither; the three are disjoint."""
    added, modified, deleted, props = [], [], [], {}
    for i in _ordered(ids["added"]):
        if int(i) not in before and int(i) in current:
            added.append(i)
    for i in _ordered(ids["deleted"]):
        if int(i) in before and int(i) not in current:
            deleted.append(i)
    for i in _ordered(ids["modified"]):
        now = current.get(int(i)) if int(i) in before else None
        if now is None:
            continue
        what = differing(before[int(i)], now)
        if what:
            modified.append(i)
            props[i] = what
    return {"added": added, "modified": modified, "deleted": deleted, "changed": added + modified,
            "properties": props, "deleted_info": {i: _info(doc, before, int(i)) for i in deleted}}
