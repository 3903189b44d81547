"""One script's run on the served FreeCAD document: the undo transaction it
runs in, what it changed by value, and its commit or its rollback, verified
against the values read before the script."""

import contextlib

from hostkit.adapter import Transaction
from hostkit.executor import KIT_DIR, SCRIPT_FILENAME, describe_exception
from hostkit.wire import error as wire_error
from nexus_freecad import digest, rollback
from nexus_freecad.changes import ChangeTracker, ValueChanges
from nexus_freecad.elements import alive
from nexus_freecad.journal import Journal


class FreeCADTransaction(Transaction):
    def __init__(self, adapter, name, checkpoint):
        app = adapter.app
        doc = adapter.document()
        self.adapter = adapter
        self.app = app
        self.doc = doc
        self.count = adapter.revisions.count(doc)
        self.modified = adapter.modified(doc)
        self.doc_name, self.file_name = doc.Name, doc.FileName
        if app.ActiveDocument is None or app.ActiveDocument.Name != self.doc_name:
            # Scripts reach the document as App.ActiveDocument too.
            app.setActiveDocument(self.doc_name)
        self.documents = set(app.listDocuments())
        self.snapshot = checkpoint() if app.ActiveDocument == doc else ""
        # The document before the script, as values where the script
        # reaches: what changed, and what a rollback must put back, are
        # measured against it.
        adapter.close_journal()
        self.journal = adapter.journal = Journal(app, doc)
        self.before = set(self.journal.start)
        self.undo_base = doc.UndoCount
        self.tracker = ChangeTracker(doc.Name)
        self.final = None
        doc.openTransaction(name)
        app.addDocumentObserver(self.tracker)

    def globals(self):
        return self.adapter.script_globals(self.doc)

    def value_changes(self):
        """What the script changed by value: as it stands while it runs, and
        as it ended once tracking stopped."""
        if self.final is not None:
            return self.final
        return ValueChanges(self.journal, self.doc, self.tracker)

    def changes(self):
        return self.value_changes().snapshot()

    def finish_script(self, error, writes):
        refusal = self._kept_document()
        if refusal is not None:
            if error is not None:
                refusal["message"] += "; the script also raised %s: %s" % (error["type"], error["message"])
            error = refusal
        if error is None and writes:
            # Recompute inside the transaction so the commit holds valid
            # shapes and a failing recompute rolls back like any error.
            try:
                self.doc.recompute()
            except Exception as exc:
                error = describe_exception(exc, SCRIPT_FILENAME, hidden=(KIT_DIR, self.adapter.source_dir))
        return error

    def stop_tracking(self):
        self.app.removeDocumentObserver(self.tracker)
        self.final = ValueChanges(self.journal, self.doc, self.tracker)

    def commit(self):
        self.journal.close()
        try:
            self.doc.commitTransaction()
        except Exception as exc:
            return wire_error(type(exc).__name__, "commit failed: %s" % exc)
        return None

    def closed(self):
        return not alive(self.doc)

    def reopen(self, error):
        # The script closed the document: what it was before the script is
        # its checkpoint.
        try:
            self.journal.close()
            if not self.snapshot:
                raise RuntimeError("no checkpoint was saved before the script")
            self.doc = self.adapter.reopen(self.doc_name, self.file_name, self.snapshot)
            # What the script changed before it closed the document is held
            # to its values; the rest is the checkpoint's, held to its names
            # and states.
            problems = digest.describe(self.journal.compare(self.doc, new_props=False))
            if not problems:
                self.adapter.restored(self.doc, self.count, self.modified)
            error["message"] += "; the document was reopened as it was before the script"
            return problems
        except Exception as exc:
            error["message"] += "; reopening the document as it was failed: %s" % exc
            return ["reopening the document as it was failed: %s" % exc]

    def changed(self):
        return (self.doc.UndoCount > self.undo_base or self.tracker.untracked
                or not self.value_changes().empty())

    def rollback(self):
        doc = self.doc
        full = None
        problems = rollback.undo_to(doc, self.undo_base, self.before, self.tracker.commits)
        if self.tracker.untracked and not self.snapshot:
            # Undo cannot take back a change made with no transaction
            # open, and there is no checkpoint to reload in its place.
            problems.append("the script changed the document outside any transaction and no checkpoint "
                            "was saved to reload")
        elif (problems or self.tracker.untracked) and self.snapshot:
            # The script changed the document outside any transaction or
            # rewrote the undo history: only the checkpoint is exact.
            try:
                doc, full = self._reload(doc)
                problems = []
            except Exception as exc:
                problems.append("reloading the checkpoint failed: %s" % exc)
        if not problems and alive(doc):
            doc, problems = self._verified(doc, full)
        self.journal.close()
        if not problems and alive(doc) and doc.Name == self.doc_name:
            # The document is exactly as before, so is its revision.
            self.adapter.restored(doc, self.count, self.modified)
        self.doc = doc
        return problems

    def _reload(self, doc):
        """Reloads the checkpoint in place of doc; answers the reloaded
        document and the whole document before the script to hold it to
        (read while the journal still accounts for every object)."""
        full, lost = self.journal.full(doc)
        self.journal.close()
        if lost:
            raise RuntimeError("no values were kept of %s" % ", ".join(sorted(lost)))
        return self.adapter.reload(doc, self.snapshot), full

    def _verified(self, doc, full=None):
        """Holds the rolled-back document to the document before the script,
        state included: FreeCAD's undo does not restore everything (Draft's
        move, rotate and scale leave values moved; objects come back
        Touched). What differs is set back from the values kept; what still
        differs then, the checkpoint is reloaded for. Answers the document
        and what still differs, naming each object. full is the whole
        document before the script once a checkpoint was reloaded."""
        if full is None:
            differences = self.journal.compare(doc)
            for _ in range(2):
                if not differences:
                    return doc, []
                self.journal.restore(doc, differences)
                differences = self.journal.compare(doc)
            if not differences:
                return doc, []
            if not self.snapshot:
                return doc, digest.describe(differences)
            try:
                doc, full = self._reload(doc)
            except Exception as exc:
                return doc, digest.describe(differences) + ["reloading the checkpoint failed: %s" % exc]
        # Restoring its file may add properties the objects lacked; those
        # are the file's, not the script's doing.
        differences = digest.compare(full, digest.capture(doc), new_props=False)
        if differences:
            digest.restore(doc, full, differences)
            differences = digest.compare(full, digest.capture(doc), new_props=False)
        return doc, digest.describe(differences)

    @contextlib.contextmanager
    def isolated(self):
        doc = self.doc
        before = {o.Name for o in doc.Objects}
        undo_base = doc.UndoCount
        count, modified = self.adapter.revisions.count(doc), self.adapter.modified(doc)
        doc.openTransaction("Nexus epilogue")
        problems = []
        try:
            yield problems
        finally:
            found = rollback.undo_to(doc, undo_base, before) if alive(doc) else []
            if alive(doc) and not found:
                self.adapter.restored(doc, count, modified)
            problems.extend(found)

    def _kept_document(self):
        """Undoes a script's switch away from the served document, closes the
        documents it opened then, and answers the refusal, or None when the
        script left the served document active and open."""
        name = self.doc_name
        closed = not alive(self.doc)
        active = self.app.ActiveDocument
        if not closed and active is not None and active.Name == name:
            return None
        switched_to = "" if closed or active is None else active.Name
        for other in sorted(set(self.app.listDocuments()) - self.documents):
            with contextlib.suppress(Exception):
                self.app.closeDocument(other)
        if closed:
            return wire_error("DocumentClosed",
                              "the script closed %s, the document this runtime serves; closing it is refused and "
                              "nothing the script did was kept" % name)
        self.app.setActiveDocument(name)
        return wire_error("DocumentSwitched",
                          "the script made %s the active document instead of %s, the document this runtime serves; "
                          "switching documents is refused: %s is active again, the documents the script opened were "
                          "closed and nothing the script did was kept" % (switched_to or "no document", name, name))
