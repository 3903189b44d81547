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
