"""Change tracking: FreeCAD document observers that count every change to
a document (its revision) and record what one script changed."""

import secrets

from nexus_freecad.elements import alive, renderable


def object_info(obj):
    info = {"label": "", "typeId": "", "ifcType": "", "proxyType": ""}
    for key, attr in (("label", "Label"), ("typeId", "TypeId"), ("ifcType", "IfcType")):
        try:
            info[key] = str(getattr(obj, attr, "") or "")
        except Exception:
            pass
    try:
        # Arch and Draft objects say what they are through their proxy; the
        # change report needs it to tell a wall from the line it was drawn on.
        info["proxyType"] = str(getattr(getattr(obj, "Proxy", None), "Type", "") or "")
    except Exception:
        pass
    return info


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
    """A FreeCAD document observer that records what one script changed."""

    def __init__(self, doc_name):
        self.doc_name = doc_name
        self.added = []
        self.modified = []
        self.deleted = []
        self.deleted_info = {}
        # Set when the document changed with no transaction open (the script
        # closed the runtime's): FreeCAD's undo cannot take that back.
        self.untracked = False
        # Which properties changed, per object, and where deleted objects
        # were: the affected view frames geometric changes only.
        self.props = {}
        self.deleted_boxes = []
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
        if not self._mine(obj):
            return
        name = obj.Name
        if name in self.modified:
            # Construction sets properties before FreeCAD announces the object.
            self.modified.remove(name)
        if name not in self.added:
            self.added.append(name)

    def slotDeletedObject(self, obj):
        if not self._mine(obj):
            return
        name = obj.Name
        if name in self.added:
            # Created and removed by the same script: it never existed.
            self.added.remove(name)
            return
        if name in self.modified:
            self.modified.remove(name)
        if name not in self.deleted:
            self.deleted.append(name)
            self.deleted_info[name] = object_info(obj)
            try:
                if renderable(obj):
                    self.deleted_boxes.append(obj.Shape.BoundBox)
            except Exception:
                pass

    def slotChangedObject(self, obj, prop):
        if not self._mine(obj):
            return
        name = obj.Name
        self.props.setdefault(name, set()).add(str(prop))
        if name in self.added or name in self.deleted or name in self.modified:
            return
        self.modified.append(name)

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
