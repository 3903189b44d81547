"""FreeCAD as a host of the kit: the document the runtime serves, its
revision, checkpoints and reloads, the names a script sees, and views."""

import os

from hostkit import saving
from hostkit.adapter import Adapter, DocumentCopy
from nexus_freecad import guimark, model, views
from nexus_freecad.changes import RevisionTracker
from nexus_freecad.elements import alive, doc_label
from nexus_freecad.transaction import FreeCADTransaction

RUNTIME_VERSION = "0.1.0"
HOST_APP = "freecad"


class FreeCADAdapter(Adapter):
    host_app = HOST_APP
    runtime_version = RUNTIME_VERSION
    source_dir = os.path.dirname(os.path.abspath(__file__))

    def __init__(self, app, gui):
        self.app = app
        self.gui = gui
        self.revisions = RevisionTracker()
        self.app.addDocumentObserver(self.revisions)
        # The document the runtime serves: the one it was started on.
        self.served = ""
        # The running transaction's journal, attached as a document observer
        # until the transaction ends.
        self.journal = None

    def _served_doc(self):
        if self.served and self.served in self.app.listDocuments():
            return self.app.getDocument(self.served)
        return None

    def _current(self):
        return self._served_doc() or self.app.ActiveDocument

    def document(self):
        """The document the runtime serves. Scripts cannot close it or switch
        away from it; only when it is gone otherwise (a person closed it in
        the GUI) does the runtime serve the active document, or a new one."""
        doc = self._served_doc()
        if doc is None:
            doc = self.app.ActiveDocument
            if doc is None:
                doc = self.app.newDocument("Nexus")
                self.app.setActiveDocument(doc.Name)
            self.served = doc.Name
        # Rollback relies on FreeCAD's undo; headless documents start without it.
        if not doc.UndoMode:
            doc.UndoMode = 1
        return doc

    def serve(self):
        self.document()

    def new_document(self):
        # The document served before stays open (in the GUI, a tab of its
        # own) and saved where it was.
        doc = self.app.newDocument("Nexus")
        self.app.setActiveDocument(doc.Name)
        doc.UndoMode = 1
        self.served = doc.Name

    def host_version(self):
        return ".".join(self.app.Version()[:3])

    def document_label(self):
        return doc_label(self._current())

    def revision(self):
        return self.revisions.revision(self._current())

    def script_globals(self, doc):
        """The names a script or epilogue on doc sees."""
        ns = {"App": self.app, "FreeCAD": self.app, "doc": doc}
        if self.gui:
            import FreeCADGui
            ns["Gui"] = FreeCADGui
            ns["FreeCADGui"] = FreeCADGui
        return ns

    def globals(self):
        return self.script_globals(self._current())

    def checkpoint_copy(self):
        doc = self._served_doc()
        if doc is None:
            return None
        return DocumentCopy(doc.Name + ".FCStd", doc.FileName or "", doc.saveCopy)

    def save_document(self, path, before_replace=None):
        doc = self._served_doc()
        if doc is None:
            raise RuntimeError("no document is open to save")
        # FreeCAD's own backup rule: CreateBackupFiles keeps CountBackupFiles
        # previous versions as FILE1..FILEn (Preferences > General > Document).
        params = self.app.ParamGet("User parameter:BaseApp/Preferences/Document")
        backups = params.GetInt("CountBackupFiles", 1) if params.GetBool("CreateBackupFiles", True) else 0
        saving.save_atomically(doc.saveCopy, path, max(0, backups), before_replace)

    def modified(self, doc):
        return guimark.modified(self.gui, doc.Name)

    def restored(self, doc, count, modified):
        """Puts back what a run that left doc exactly as before moved: its
        revision count, and the GUI's modified mark."""
        self.revisions.restore(doc, count)
        guimark.set_modified(self.gui, doc.Name, modified)

    def close_journal(self):
        """Detaches a journal a transaction that ended abnormally left."""
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    def begin(self, transaction_name, checkpoint):
        return FreeCADTransaction(self, transaction_name, checkpoint)

    def capture(self, view, rule, framing=None, transaction=None):
        if transaction is not None and alive(transaction.doc):
            doc, tracker = transaction.doc, transaction.value_changes()
        else:
            doc, tracker = self.document(), None
        return views.capture(doc, self.gui, view, rule, framing, tracker)

    def export_model(self, ids, limit, transaction=None):
        # A transaction works on the served document itself, so what it
        # holds is what is exported.
        doc = transaction.doc if transaction is not None and alive(transaction.doc) else self.document()
        return model.export(doc, ids, limit)

    def reopen(self, name, file_name, path):
        """Opens the checkpoint at path in place of the closed document name
        (and of any document the script opened under that name)."""
        if name in self.app.listDocuments():
            self.app.closeDocument(name)
        fresh = self.app.openDocument(path)
        fresh.FileName = file_name
        self.app.setActiveDocument(fresh.Name)
        fresh.UndoMode = 1
        self.served = fresh.Name
        return fresh

    def reload(self, doc, path):
        """Replaces doc by its checkpoint; answers the reopened document."""
        return self.reopen(doc.Name, doc.FileName, path)
