"""Change tracking: FreeCAD document observers that count every change to
a document (its revision) and see how one script changed it (outside any
transaction, commits of its own, where deleted objects were), and what the
script changed by value: an object is modified only when a value of it
differs from before the script."""

import secrets

from nexus_freecad import digest
from nexus_freecad.elements import alive, renderable


class RevisionTracker:
    """A document observer that keeps the documents' revisions.

    A revision is "<epoch>.<document name>.<count>": the count is bumped on
    every object created, deleted or changed and every document property
    changed, created, closed or undone, whoever did it (a script, the GUI,
    another macro, a reload). A counter kept by an observer costs nothing per
    read and sees every property, where a hash of a dump would cost a walk of
    the whole document per request and see only what the dump covers. The
    epoch is new with every runtime process, so a revision seen before a
    restart never matches after it. Runs that leave the document exactly as
    before (a preview, a rollback, a read-only run) put the count back.
    """

    def __init__(self):
        self.epoch = secrets.token_hex(4)
        self.counts = {}

    def _bump(self, doc):
        try:
            name = doc.Name
        except Exception:
            return
        self.counts[name] = self.counts.get(name, 0) + 1

    def _bump_object(self, obj):
        try:
            self._bump(obj.Document)
        except Exception:
            pass

    # Every slot only bumps the count of the document it concerns.
    slotCreatedObject = slotDeletedObject = _bump_object
    slotCreatedDocument = slotDeletedDocument = slotRelabelDocument = slotUndoDocument = slotRedoDocument = _bump

    def slotChangedObject(self, obj, _prop):
        self._bump_object(obj)

    def slotChangedDocument(self, doc, _prop):
        self._bump(doc)

    def revision(self, doc):
        if doc is None or not alive(doc):
            return ""
        return "%s.%s.%d" % (self.epoch, doc.Name, self.counts.get(doc.Name, 0))

    def count(self, doc):
        return self.counts.get(doc.Name, 0)

    def restore(self, doc, count):
        """Puts doc's count back after a run that left it exactly as before."""
        self.counts[doc.Name] = count


class ChangeTracker:
    """A FreeCAD document observer that sees how one script changed the
    document: with no transaction open, in commits of its own, and where the
    objects it deleted were. What changed is ValueChanges', by value."""

    def __init__(self, doc_name):
        self.doc_name = doc_name
        # Where deleted objects were: the affected view frames them.
        self.deleted_boxes = {}
        # Set when the document changed with no transaction open (the script
        # closed the runtime's): FreeCAD's undo cannot take that back.
        self.untracked = False
        # Transactions with changes the script committed itself.
        self.commits = 0

    def slotCommitTransaction(self, doc):
        try:
            if doc.Name == self.doc_name:
                self.commits += 1
        except Exception:
            pass

    def _mine(self, obj):
        try:
            if obj.Document.Name != self.doc_name:
                return False
            if not obj.Document.HasPendingTransaction:
                self.untracked = True
            return True
        except Exception:
            return False

    def slotCreatedObject(self, obj):
        self._mine(obj)

    def slotDeletedObject(self, obj):
        if not self._mine(obj):
            return
        try:
            if renderable(obj):
                self.deleted_boxes[obj.Name] = obj.Shape.BoundBox
        except Exception:
            pass

    def slotChangedObject(self, obj, _prop):
        self._mine(obj)


class ValueChanges(object):
    """What a transaction changed, by value, against the journal of the
    document before it: added and deleted by name, modified only when some
    value differs (a property set to its own value is no change), an object
    created and deleted by the same script neither. The three are disjoint,
    in document order. props names what differs of each modified object
    (the affected view reads it, with deleted_boxes)."""

    def __init__(self, journal, doc, tracker):
        # A document the script closed is reopened as it was: nothing changed.
        now = [o.Name for o in doc.Objects] if alive(doc) else list(journal.names)
        present = set(now)
        self.added = [n for n in now if n not in journal.start]
        self.deleted = [n for n in journal.names if n not in present]
        self.modified, self.props = [], {}
        if alive(doc):
            for n in journal.names:
                before = journal.before(n)
                if before is None or n not in present:
                    continue
                what = digest.differing(before, digest.ObjectValues(doc.getObject(n)), False)
                if what:
                    self.modified.append(n)
                    self.props[n] = set(what)
        self.deleted_info = {n: journal.info(n) for n in self.deleted}
        self.deleted_boxes = [tracker.deleted_boxes[n] for n in self.deleted if n in tracker.deleted_boxes]

    def snapshot(self):
        return {
            "added": list(self.added),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
            "changed": list(self.added) + list(self.modified),
            "deleted_info": {k: dict(v) for k, v in self.deleted_info.items()},
            "properties": {k: sorted(self.props.get(k, ())) for k in self.modified},
        }

    def empty(self):
        return not (self.added or self.modified or self.deleted)
