# The part of the change report every host shares; the capability service
# appends it to a host's collector. The collector defines, for this to use:
#   _changes: nexus_changes() of the committed transaction, with the ids of the
#     elements it added, modified and deleted;
#   _describe(id): a dict with id, category, type, label and level;
#   _describe_deleted(id): the same for an element that is gone, or None when
#     nothing but its id is left to say.
# Elements are named one per line while there are few enough to act on, and
# counted by category and type once there are not.
NAMED_LIMIT = 15


def _line(sign, d):
    where = (" on %s" % d["level"]) if d["level"] else ""
    return '%s #%s  %s  %s  "%s"%s' % (sign, d["id"], d["category"], d["type"], d["label"], where)


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


def _report():
    added = [_describe(i) for i in _changes.get("added", [])]
    modified = [_describe(i) for i in _changes.get("modified", [])]
    deleted, gone = [], []
    for i in _changes.get("deleted", []):
        d = _describe_deleted(i)
        if d is None:
            gone.append(i)
        else:
            deleted.append(d)
    total = len(added) + len(modified) + len(deleted) + len(gone)
    print("=== CHANGE REPORT ===")
    print("%d element(s) changed: %d added, %d modified, %d deleted" %
          (total, len(added), len(modified), len(deleted) + len(gone)))
    if total == 0:
        print("The transaction committed but changed nothing.")
        return
    if total <= NAMED_LIMIT:
        for sign, items in (("+", added), ("~", modified), ("-", deleted)):
            for d in items:
                print(_line(sign, d))
    else:
        for title, items in (("Added", added), ("Modified", modified), ("Deleted", deleted)):
            if items:
                _grouped(title, items)
    if gone:
        # The host cannot describe these once they are gone; their ids are all that is left.
        shown = ", ".join("#%s" % i for i in gone[:NAMED_LIMIT])
        more = " and %d more" % (len(gone) - NAMED_LIMIT) if len(gone) > NAMED_LIMIT else ""
        print("Deleted: %d element(s): %s%s" % (len(gone), shown, more))
    levels = sorted({d["level"] for d in added + modified if d["level"]})
    if levels:
        print("Levels touched: %s" % ", ".join(levels))


_report()
