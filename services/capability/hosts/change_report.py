# The part of the change report every host shares; the capability service
# appends it to a host's collector. The collector defines, for this to use:
#   _changes: nexus_changes() of the transaction, with the ids of the
#     elements it added, modified and deleted (and, where the host knows them,
#     "properties": the changed property names per modified element);
#   _describe(id): a dict with id, category, type, label, level and helper:
#     helper is "" for a building element (a wall, a door, a level...) and a
#     readable singular kind ("Draft line", "sketch") for a construction helper;
#   _describe_deleted(id): the same for an element that is gone, or None when
#     nothing but its id is left to say.
# Building elements are named one per line while there are few enough to act
# on, and counted by category and type once there are not. Construction
# helpers are only counted, on one line: a person reviews four walls and a
# door, not the lines and sketches they were drawn from. The last line is the
# same report as data, one JSON object after REPORT_MARKER, which the runtime
# moves out of the text into the result.
import json as _json

NAMED_LIMIT = 15
REPORT_MARKER = "NEXUS-REPORT-JSON "
_KINDS = (("CHANGE_KIND_ADDED", "added", "+"), ("CHANGE_KIND_MODIFIED", "modified", "~"),
          ("CHANGE_KIND_DELETED", "deleted", "-"))
_PROPERTIES_SHOWN = 8


def _line(sign, d):
    where = (" on %s" % d["level"]) if d["level"] else ""
    props = d.get("properties") or []
    what = ""
    if props:
        more = ", ..." if len(props) > _PROPERTIES_SHOWN else ""
        what = "  (%s%s)" % (", ".join(props[:_PROPERTIES_SHOWN]), more)
    return '%s #%s  %s  %s  "%s"%s%s' % (sign, d["id"], d["category"], d["type"], d["label"], where, what)


# A host may name its elements its own way: a collector that defines
# _element_line(sign, d) replaces _line (Revit's reads as the article's
# report: "#id Walls | Basic Wall: Generic - 200mm | Level: Level 1").
_line = globals().get("_element_line", _line)


def _grouped(title, items):
    groups = {}
    for d in items:
        key = (d["category"], d["type"])
        if key not in groups:
            groups[key] = [0, d["id"]]
        groups[key][0] += 1
    print("%s by category and type:" % title)
    for (category, kind), (count, example) in sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0])):
        print("  %s / %s: %d (e.g. #%s)" % (category, kind, count, example))


def _plural(kind, count):
    if count == 1:
        return kind
    if kind.endswith(("s", "x", "ch", "sh")):
        return kind + "es"
    if kind.endswith("y") and kind[-2:-1] not in "aeiou":
        return kind[:-1] + "ies"
    return kind + "s"


def _helper_counts(items):
    """Counts helpers by kind, most first, in a stable order."""
    counts = {}
    for d in items:
        counts[d["helper"]] = counts.get(d["helper"], 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _helpers_line(helpers):
    parts = []
    for _, word, _ in _KINDS:
        counts = _helper_counts(helpers[word])
        if counts:
            total = sum(n for _, n in counts)
            parts.append("%d %s (%s)" % (total, word, ", ".join("%d %s" % (n, _plural(k, n)) for k, n in counts)))
    return "Construction helpers: " + "; ".join(parts)


def _report():
    props = _changes.get("properties") or {}
    described = {"added": [], "modified": [], "deleted": []}
    gone = []
    for word, ids in (("added", _changes.get("added", [])), ("modified", _changes.get("modified", []))):
        for i in ids:
            d = _describe(i)
            if word == "modified":
                d["properties"] = list(props.get(i) or props.get(str(i)) or [])
            described[word].append(d)
    for i in _changes.get("deleted", []):
        d = _describe_deleted(i)
        if d is None:
            gone.append(i)
        else:
            described["deleted"].append(d)
    elements = {w: [d for d in ds if not d.get("helper")] for w, ds in described.items()}
    helpers = {w: [d for d in ds if d.get("helper")] for w, ds in described.items()}
    total = sum(len(ds) for ds in elements.values()) + len(gone)
    print("=== CHANGE REPORT ===")
    print("%d building element(s) changed: %d added, %d modified, %d deleted" %
          (total, len(elements["added"]), len(elements["modified"]), len(elements["deleted"]) + len(gone)))
    if total == 0 and not any(helpers.values()):
        print("The transaction changed nothing.")
    elif total <= NAMED_LIMIT:
        for _, word, sign in _KINDS:
            for d in elements[word]:
                print(_line(sign, d))
    else:
        for title, word in (("Added", "added"), ("Modified", "modified"), ("Deleted", "deleted")):
            if elements[word]:
                _grouped(title, elements[word])
    if gone:
        # The host cannot describe these once they are gone; their ids are all that is left.
        shown = ", ".join("#%s" % i for i in gone[:NAMED_LIMIT])
        more = " and %d more" % (len(gone) - NAMED_LIMIT) if len(gone) > NAMED_LIMIT else ""
        print("Deleted: %d element(s) no longer described: %s%s" % (len(gone), shown, more))
    if any(helpers.values()):
        print(_helpers_line(helpers))
    levels = sorted({d["level"] for d in elements["added"] + elements["modified"] if d["level"]})
    if levels:
        print("Levels touched: %s" % ", ".join(levels))
    # And add lines of its own before the data (Revit: its failure warnings).
    for note in globals().get("_host_notes", lambda: [])():
        print(note)
    data = {"elements": [], "helpers": []}
    for change, word, _ in _KINDS:
        for d in elements[word]:
            entry = {"change": change, "category": str(d["category"]), "name": str(d["id"]), "label": str(d["label"])}
            for key in ("type", "level"):
                if d.get(key):
                    entry[key] = str(d[key])
            if d.get("properties"):
                entry["properties"] = [str(p) for p in d["properties"]]
            data["elements"].append(entry)
        if change == "CHANGE_KIND_DELETED":
            for i in gone:
                data["elements"].append({"change": change, "category": "Unknown", "name": str(i), "label": ""})
        for kind, count in _helper_counts(helpers[word]):
            data["helpers"].append({"change": change, "kind": kind, "count": count})
    print(REPORT_MARKER + _json.dumps(data, separators=(",", ":")))


_report()
