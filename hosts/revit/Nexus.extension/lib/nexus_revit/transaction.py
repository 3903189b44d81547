"""One script's run on the served Revit document.

The script runs inside a TransactionGroup named after it, in one Transaction;
right after the script the add-in commits that transaction inside the group,
so Revit's failure processing runs (warnings become notes, errors roll it
back) and DocumentChanged reports the ids it added, modified and deleted.
Then the group is assimilated (MODE_TRANSACTION: one undo item) or rolled
back (MODE_READ_ONLY, MODE_PREVIEW, a failure), and a rollback is verified
against the document's state from before the script.
"""
import contextlib

from hostkit.adapter import Transaction
from hostkit.wire import error as wire_error
from nexus_revit.ids import id_strings
from nexus_revit.state import differences, document_state, value_changes


def _preprocessor_class():
    from Autodesk.Revit.DB import FailureProcessingResult, FailureSeverity, IFailuresPreprocessor

    class CollectFailures(IFailuresPreprocessor):
        """Takes Revit's warnings as notes (deleting them, so no dialog
        waits for a person) and lets errors roll the transaction back."""
        __namespace__ = "Nexus"

        def __init__(self):
            super().__init__()
            self.warnings = []
            self.errors = []

        def PreprocessFailures(self, accessor):
            for message in list(accessor.GetFailureMessages()):
                text = message.GetDescriptionText()
                if message.GetSeverity() == FailureSeverity.Warning:
                    self.warnings.append(text)
                    accessor.DeleteWarning(message)
                else:
                    self.errors.append(text)
            return FailureProcessingResult.ProceedWithRollBack if self.errors else FailureProcessingResult.Continue

    return CollectFailures


class RevitTransaction(Transaction):
    def __init__(self, adapter, name):
        from Autodesk.Revit.DB import Transaction as DBTransaction, TransactionGroup
        self.adapter = adapter
        self.doc = adapter.document()
        self.count = adapter.revisions.count
        self.before = document_state(self.doc)
        self.ids = {"added": [], "modified": [], "deleted": []}
        self.warnings = []
        self.final = None
        self.tracking = True
        adapter.revisions.listeners.append(self._changed)
        self.group = TransactionGroup(self.doc, name)
        self.group.Start()
        self.txn = DBTransaction(self.doc, name)
        self.txn.Start()
        self.failures = _preprocessor_class()()
        options = self.txn.GetFailureHandlingOptions()
        self.txn.SetFailureHandlingOptions(options.SetFailuresPreprocessor(self.failures))

    def _changed(self, args):
        from Autodesk.Revit.DB.Events import UndoOperation
        if self.tracking and args.Operation == UndoOperation.TransactionCommitted:
            for key, ids in (("added", args.GetAddedElementIds()), ("modified", args.GetModifiedElementIds()),
                             ("deleted", args.GetDeletedElementIds())):
                self.ids[key].extend(i for i in id_strings(ids) if i not in self.ids[key])

    def globals(self):
        return self.adapter.script_globals()

    def changes(self):
        """What the transaction changed by value: as DocumentChanged named it
        so far while it runs, as it ended once tracking stopped."""
        out = self.final
        if out is None:
            out = value_changes(self.before, self.doc, self.ids)
        out = dict(out)
        out["warnings"] = list(self.warnings)
        return out

    def finish_script(self, error, writes):
        from Autodesk.Revit.DB import TransactionStatus
        if self.txn.GetStatus() != TransactionStatus.Started:
            # The script committed or rolled back the add-in's transaction.
            refusal = wire_error("TransactionClosed",
                                 "the script ended the add-in's transaction itself (its status is %s); scripts must "
                                 "not start, commit or roll back transactions: the add-in runs each script in one "
                                 "and nothing the script did was kept" % self.txn.GetStatus())
            if error is not None:
                refusal["message"] += "; the script also raised %s: %s" % (error["type"], error["message"])
            return refusal
        if error is not None:
            self.txn.RollBack()
            return error
        # Committing inside the group runs Revit's failure processing and
        # raises DocumentChanged with the three id sets; the group still
        # decides whether anything is kept.
        status = self.txn.Commit()
        self.warnings = list(self.failures.warnings)
        if status != TransactionStatus.Committed:
            why = "; ".join(self.failures.errors) or "Revit answered %s" % status
            return wire_error("TransactionRolledBack",
                              "Revit's failure processing rolled the transaction back: %s; nothing was kept" % why)
        return None

    def stop_tracking(self):
        self.tracking = False
        if self._changed in self.adapter.revisions.listeners:
            self.adapter.revisions.listeners.remove(self._changed)
        if self.doc.IsValidObject:
            self.final = value_changes(self.before, self.doc, self.ids)

    def commit(self):
        from Autodesk.Revit.DB import TransactionStatus
        if self.group.Assimilate() != TransactionStatus.Committed:
            return wire_error("CommitFailed", "Revit did not commit the transaction group")
        return None

    def closed(self):
        return not self.doc.IsValidObject

    def reopen(self, error):
        error["message"] += "; the document is closed and the add-in cannot reopen it"
        return ["the document was closed"]

    def changed(self):
        c = self.changes()
        return bool(c["added"] or c["modified"] or c["deleted"])

    def rollback(self):
        from Autodesk.Revit.DB import TransactionStatus
        if self.txn.GetStatus() == TransactionStatus.Started:
            self.txn.RollBack()
        if self.group.GetStatus() == TransactionStatus.Started:
            self.group.RollBack()
        problems = differences(self.before, document_state(self.doc))
        if not problems:
            # The document is exactly as before, so is its revision.
            self.adapter.revisions.count = self.count
        return problems

    @contextlib.contextmanager
    def isolated(self):
        """The epilogue after a commit runs with no transaction open, where
        any change throws ModificationOutsideTransactionException; the state
        check catches whatever got past that."""
        before = document_state(self.doc)
        count = self.adapter.revisions.count
        problems = []
        try:
            yield problems
        finally:
            found = differences(before, document_state(self.doc))
            if not found:
                self.adapter.revisions.count = count
            problems.extend(found)
