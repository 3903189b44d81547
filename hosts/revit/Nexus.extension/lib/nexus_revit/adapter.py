"""Revit as a host of the kit: the document the runtime serves, its
revision, the names a script sees, and views."""
import json
import os
import uuid

from hostkit.adapter import Adapter, DocumentCopy
from nexus_revit import model, views
from nexus_revit.dialogs import DialogAnswers
from nexus_revit.ids import id_value
from nexus_revit.mirror import Mirror
from nexus_revit.transaction import RevitTransaction

RUNTIME_VERSION = "0.1.0"
HOST_APP = "revit"


def _same(a, b):
    """Document identity: Document.Equals under pythonnet, the object on the
    double."""
    equals = getattr(a, "Equals", None)
    return equals(b) if equals is not None else a is b


class RevisionTracker:
    """Counts the served document's changes from Application.DocumentChanged,
    which Revit raises for every commit, undo and redo, whoever made it (a
    script, the person, another add-in). The token carries a per-runtime
    nonce, so a restarted runtime never repeats an old one. The mirror takes
    each change first, then the listeners (an open transaction's) get the
    operation and the three id lists, read once."""

    def __init__(self, app, doc, mirror):
        self.doc = doc
        self.mirror = mirror
        self.count = 0
        self.nonce = uuid.uuid4().hex[:8]
        self.listeners = []
        app.DocumentChanged += self._on_changed

    def _on_changed(self, sender, args):
        if not _same(args.GetDocument(), self.doc):
            return
        self.count += 1
        added = [id_value(i) for i in args.GetAddedElementIds()]
        modified = [id_value(i) for i in args.GetModifiedElementIds()]
        deleted = [id_value(i) for i in args.GetDeletedElementIds()]
        self.mirror.changed(added, modified, deleted)
        operation = args.Operation
        for listener in list(self.listeners):
            listener(operation, added, modified, deleted)

    def token(self):
        return "%s-%d" % (self.nonce, self.count)

    def detach(self, app):
        app.DocumentChanged -= self._on_changed


class RevitAdapter(Adapter):
    host_app = HOST_APP
    runtime_version = RUNTIME_VERSION
    source_dir = os.path.dirname(os.path.abspath(__file__))

    def __init__(self, uiapp):
        self.uiapp = uiapp
        self.uidoc = uiapp.ActiveUIDocument
        # The document the runtime serves: the one active when it started.
        self.doc = self.uidoc.Document
        # Read in Idling slices from now on; kept current by every change.
        self.mirror = Mirror(uiapp, self.doc)
        self.revisions = RevisionTracker(uiapp.Application, self.doc, self.mirror)
        self.dialogs = DialogAnswers(uiapp)
        # The ids the last transaction touched, for its checkpoint record.
        self.last_touched = ()

    def close(self):
        """Leaves Revit's events: a disconnected add-in reads nothing more
        and answers no dialog."""
        self.mirror.detach()
        self.dialogs.detach()
        self.revisions.detach(self.uiapp.Application)

    def document(self):
        return self.doc

    def serve(self):
        if not self.doc.IsValidObject:
            raise RuntimeError("the document this runtime served was closed; connect again from the open project")

    def host_version(self):
        app = self.uiapp.Application
        return "%s (%s)" % (app.VersionNumber, app.VersionBuild)

    def document_label(self):
        return self.doc.PathName or self.doc.Title

    def revision(self):
        return self.revisions.token()

    def script_globals(self):
        """doc, uidoc and app as the guidance teaches, and __revit__ as pyRevit
        names the UIApplication."""
        return {"doc": self.doc, "uidoc": self.uidoc, "app": self.uiapp.Application, "__revit__": self.uiapp}

    def globals(self):
        return self.script_globals()

    def checkpoint_copy(self):
        """The kit's checkpoints number the ledger's generations. A Revit
        project is never reloaded by the add-in (exact rollback comes from the
        TransactionGroup and is verified; a restart is a restart of Revit),
        so the copy is a record of what each generation changed (the states
        of the elements the last commit touched, from the mirror), not a
        project file: writing the whole project's states at every commit
        would cost by the size of the model."""
        if not self.doc.IsValidObject:
            return None
        last = self.last_touched

        def save(path):
            record = {"document": self.doc.Title, "elements": len(self.mirror.states),
                      "touched": {str(i): self.mirror.states.get(i) for i in sorted(last)}}
            with open(path, "w", encoding="utf-8") as f:
                json.dump(record, f, sort_keys=True, default=str)
        return DocumentCopy("%s.state.json" % (self.doc.Title or "project"), self.doc.PathName or "", save)

    def save_document(self, path):
        """The add-in never saves the project: in Revit the person saves (and
        worksharing synchronises) when they choose, and the runtime is
        started without a file to save to."""
        raise RuntimeError("the Revit add-in does not save the project; save it in Revit")

    def begin(self, transaction_name, checkpoint):
        return RevitTransaction(self, transaction_name)

    def export_model(self, ids, limit, transaction=None):
        # A transaction works on the served document itself.
        return model.export(self.doc, ids, limit)

    def capture(self, view, rule, framing=None, transaction=None):
        changed = transaction.changes()["changed"] if transaction is not None else None
        return views.capture(self.doc, view, rule, framing, changed)
