"""Exact rollback through FreeCAD's undo: every undo step above where the
run started is undone, and objects undo left behind are removed. What undo
cannot take back is answered as a problem, for the caller to reload the
checkpoint instead."""


def remove_new(doc, before):
    """Removes what FreeCAD's undo left behind; answers names it could not restore."""
    try:
        now = {o.Name for o in doc.Objects}
    except Exception:
        return []
    for name in sorted(now - before, reverse=True):
        try:
            doc.removeObject(name)
        except Exception:
            pass
    return sorted(before - {o.Name for o in doc.Objects})


def _dependents_first(objects):
    """Orders objects so each comes after every other of them that links to
    it; a cycle of links is broken at one of its objects."""
    names = {o.Name: o for o in objects}
    links = {n: {d.Name for d in o.OutList if d.Name in names and d.Name != n} for n, o in names.items()}
    linked_by = {n: 0 for n in names}
    for deps in links.values():
        for d in deps:
            linked_by[d] += 1
    order, left = [], set(names)
    while left:
        ready = sorted((n for n in left if linked_by[n] == 0), reverse=True) or [max(left)]
        for n in ready:
            left.discard(n)
            order.append(n)
            for d in links[n]:
                linked_by[d] -= 1
    return order


def remove_dependents_first(doc, before):
    """Removes the objects the open transaction added, each only once no
    other of them links to it (a window before the wall it sits in and the
    sketch it is made of). FreeCAD's abort takes them back in the order they
    were made, hosts first: a window then changes (its Base set back) while
    its Hosts still name a wall already removed, and Arch's observer, which
    touches the hosts of a window that changes, prints a ReferenceError to
    the Report view. An object added and removed in one transaction leaves
    no trace in it, so the abort after this takes back the rest exactly as
    before."""
    try:
        order = _dependents_first([o for o in doc.Objects if o.Name not in before])
    except Exception:
        return
    for name in order:
        try:
            # Removing one object may remove others with it (a part's origin).
            if doc.getObject(name) is not None:
                doc.removeObject(name)
        except Exception:
            pass


def undo_to(doc, undo_base, before, commits=0):
    """Undoes everything since the undo stack stood at undo_base.

    A script may commit or abort the runtime's transaction itself (or
    open and commit its own): FreeCAD then holds its changes as undo
    steps above undo_base, and undoing them all restores the document
    exactly, whatever transaction calls the script made. Answers what
    could not be restored.
    """
    problems = []
    try:
        if doc.HasPendingTransaction:
            if doc.UndoCount == undo_base + 1:
                # The open transaction (FreeCAD counts it as an undo step)
                # holds all the script did.
                remove_dependents_first(doc, before)
            doc.abortTransaction()
    except Exception as exc:
        problems.append("abort failed: %s" % exc)
    steps = 0
    while doc.UndoCount > undo_base and steps < 100000:
        doc.undo()
        steps += 1
    if doc.UndoCount < undo_base:
        problems.append("the script cleared or undid %d earlier undo steps" % (undo_base - doc.UndoCount))
    elif steps < commits:
        # FreeCAD keeps a bounded undo history: a commit of the script's
        # own into a full one pushes out the oldest step, so the count
        # above does not move and undo by count misses it.
        problems.append("the script committed %d transaction(s) of its own into a full undo history; undo "
                        "could take back only %d" % (commits, steps))
    lost = remove_new(doc, before)
    if lost:
        problems.append("could not restore %s" % lost)
    return problems
