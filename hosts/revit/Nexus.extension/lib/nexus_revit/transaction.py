"""One script's run on the served Revit document.

The script runs inside a TransactionGroup named after it, in one Transaction;
right after the script the add-in commits that transaction inside the group,
so Revit's failure processing runs (warnings become notes, errors roll it
back) and DocumentChanged reports the ids it added, modified and deleted.
Then the group is assimilated (MODE_TRANSACTION: one undo item) or rolled
back (MODE_READ_ONLY, MODE_PREVIEW, a failure), and a rollback is verified
against the document's state from before the script.

Nothing here reads the whole document: "before" is the mirror (mirror.py)
and the journal the transaction opens in it, what changed is what
DocumentChanged named, and a rollback is verified by reading again the
elements Revit named as touched (the result says how many: "verified for
the 3 elements the transaction touched"), never more. A script that raised
still has its transaction committed inside the group before the group
rolls back, so that Revit names what it touched and the rollback can be
verified for those; a transaction Revit's failure processing rolled back
names nothing, and then the elements its failures named are verified, and
the result says which.
"""
import contextlib

from hostkit.adapter import Transaction
from hostkit.wire import error as wire_error
from nexus_revit.ids import element_id, id_value
from nexus_revit.mirror import ABSENT, Before
from nexus_revit.state import differences, value_changes


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
            self.failing = []

        def PreprocessFailures(self, accessor):
            for message in list(accessor.GetFailureMessages()):
                text = message.GetDescriptionText()
                if message.GetSeverity() == FailureSeverity.Warning:
                    self.warnings.append(text)
                    accessor.DeleteWarning(message)
                else:
                    self.errors.append(text)
                    self.failing.extend(id_value(i) for i in message.GetFailingElementIds())
            return FailureProcessingResult.ProceedWithRollBack if self.errors else FailureProcessingResult.Continue

    return CollectFailures


def _owned_by_others(doc, ids):
    """Words naming each of ids another user owns in a workshared project,
    and the owner: WorksharingUtils.GetCheckoutStatus with its out owner."""
    from Autodesk.Revit.DB import CheckoutStatus, WorksharingUtils
    if not doc.IsWorkshared:
        return []
    out = []
    for i in dict.fromkeys(ids):
        status, owner = WorksharingUtils.GetCheckoutStatus(doc, element_id(i), "")
        if status == CheckoutStatus.OwnedByOtherUser:
            el = doc.GetElement(element_id(i))
            what = "#%d" % i
            if el is not None:
                cat = el.Category
                what += "%s \"%s\"" % ((" " + cat.Name) if cat is not None else "", el.Name)
            out.append("%s is owned by %s" % (what, owner))
    return out


class RevitTransaction(Transaction):
    def __init__(self, adapter, name):
        from Autodesk.Revit.DB import Transaction as DBTransaction, TransactionGroup
        self.adapter = adapter
        self.doc = adapter.document()
        self.count = adapter.revisions.count
        self.mirror = adapter.mirror
        self.notes = []
        if not self.mirror.complete:
            # A script arrived before the Idling slices read the whole
            # project: the rest is read now, once per connection.
            n = self.mirror.read()
            self.notes.append("the add-in read the last %d element(s) of the project before this script (it had "
                              "connected moments before and was still reading it between Revit's idle moments)" % n)
        self.journal = self.mirror.open_journal()
        self.before = Before(self.mirror, self.journal)
        self.ids = {"added": [], "modified": [], "deleted": []}
        self.warnings = []
        self.final = None
        self.tracking = True
        # Why a rollback compared nothing, when Revit named no element.
        self.unnamed = ""
        self.scope = None
        adapter.revisions.listeners.append(self._changed)
        adapter.dialogs.begin()
        self.group = TransactionGroup(self.doc, name)
        self.group.Start()
        self.txn = DBTransaction(self.doc, name)
        self.txn.Start()
        self.failures = _preprocessor_class()()
        options = self.txn.GetFailureHandlingOptions()
        self.txn.SetFailureHandlingOptions(options.SetFailuresPreprocessor(self.failures))

    def _changed(self, operation, added, modified, deleted):
        from Autodesk.Revit.DB.Events import UndoOperation
        if self.tracking and operation == UndoOperation.TransactionCommitted:
            for key, ids in (("added", added), ("modified", modified), ("deleted", deleted)):
                self.ids[key].extend(str(i) for i in ids if str(i) not in self.ids[key])

    def globals(self):
        return self.adapter.script_globals()

    def changes(self):
        """What the transaction changed by value: as DocumentChanged named it
        so far while it runs, as it ended once tracking stopped."""
        out = self.final
        if out is None:
            out = value_changes(self.before, self.doc, self.ids, self.mirror.states)
        out = dict(out)
        out["warnings"] = list(self.warnings)
        # The dialogs answered so far, for the change report to name.
        out["dialogs"] = list(self.adapter.dialogs.notes or [])
        return out

    def _commit_inside_group(self):
        """Commits the script's transaction inside the group: Revit's failure
        processing runs and DocumentChanged names what it touched. Answers
        the status."""
        from Autodesk.Revit.DB import TransactionStatus
        status = self.txn.Commit()
        self.warnings = list(self.failures.warnings)
        if status != TransactionStatus.Committed:
            self.unnamed = ("Revit's failure processing rolled the transaction back before it committed, and Revit "
                            "names no elements for a transaction that did not commit")
        return status

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
            if self.txn.GetStatus() != TransactionStatus.Committed:
                self.unnamed = "the script rolled the add-in's transaction back itself, and Revit names no elements for it"
            return refusal
        if error is not None:
            # Committed only so that Revit names what the script touched; the
            # group's rollback takes it back and is verified for those.
            self._commit_inside_group()
            return error
        # Committing inside the group runs Revit's failure processing and
        # raises DocumentChanged with the three id sets; the group still
        # decides whether anything is kept.
        status = self._commit_inside_group()
        if status != TransactionStatus.Committed:
            owned = _owned_by_others(self.doc, self.failures.failing)
            if owned:
                return wire_error("TransactionRolledBack",
                                  "the script edited elements another person owns in this workshared project: %s; "
                                  "Revit refused the edit (%s) and nothing was kept. The add-in never synchronizes "
                                  "with central: ask the person to have the owner relinquish the element(s), or "
                                  "leave them out" % ("; ".join(owned), "; ".join(self.failures.errors)))
            why = "; ".join(self.failures.errors) or "Revit answered %s" % status
            return wire_error("TransactionRolledBack",
                              "Revit's failure processing rolled the transaction back: %s; nothing was kept" % why)
        return None

    def stop_tracking(self):
        self.tracking = False
        if self._changed in self.adapter.revisions.listeners:
            self.adapter.revisions.listeners.remove(self._changed)
        if self.doc.IsValidObject:
            self.final = value_changes(self.before, self.doc, self.ids, self.mirror.states)

    def commit(self):
        from Autodesk.Revit.DB import TransactionStatus
        self.adapter.last_touched = tuple(self.journal)
        self.mirror.close_journal(self.journal)
        if self.group.Assimilate() != TransactionStatus.Committed:
            return wire_error("CommitFailed", "Revit did not commit the transaction group")
        return None

    def closed(self):
        return not self.doc.IsValidObject

    def reopen(self, error):
        self.mirror.close_journal(self.journal)
        error["message"] += "; the document is closed and the add-in cannot reopen it"
        return ["the document was closed"]

    def changed(self):
        c = self.changes()
        return bool(c["added"] or c["modified"] or c["deleted"])

    def _verify(self, ids, before):
        """Reads again each of ids and answers what differs from its state
        in before (a Before: the journal, then the mirror)."""
        ids = sorted(set(ids))
        now = self.mirror.read_now(ids)
        was = {i: before.get(i) for i in ids if before.get(i) is not None}
        return differences(was, {i: s for i, s in now.items() if s is not ABSENT})

    def rollback(self):
        from Autodesk.Revit.DB import TransactionStatus
        if self.txn.GetStatus() == TransactionStatus.Started:
            self.txn.RollBack()
            self.unnamed = self.unnamed or "the transaction was rolled back before it committed, and Revit names no elements for it"
        if self.group.GetStatus() == TransactionStatus.Started:
            self.group.RollBack()
        self.mirror.close_journal(self.journal)
        # Every element DocumentChanged named since the script began; when
        # Revit named none (its failure processing rolled the transaction
        # back), the elements its failures named.
        ids, named = list(self.journal), "the transaction touched"
        if not ids and self.failures.failing:
            ids, named = list(self.failures.failing), "Revit's failure processing named"
        problems = self._verify(ids, self.before)
        n = len(set(ids))
        if n:
            self.scope = "verified for the %d element%s %s" % (n, "" if n == 1 else "s", named)
            if named != "the transaction touched":
                self.scope += " (%s)" % self.unnamed
        elif self.unnamed:
            self.scope = "nothing to compare: %s" % self.unnamed
        else:
            self.scope = "verified: the transaction touched no element"
        if not problems:
            # The document is exactly as before, so is its revision.
            self.adapter.revisions.count = self.count
        return problems

    def result_fields(self, rolled_back):
        out = {}
        if rolled_back and self.scope:
            out["rollbackVerified"] = self.scope
        notes = self.notes + self.adapter.dialogs.end()
        if notes:
            out["hostNotes"] = notes
        return out

    @contextlib.contextmanager
    def isolated(self):
        """The epilogue after a commit runs with no transaction open, where
        any change throws ModificationOutsideTransactionException; a journal
        catches whatever got past that, and what it names is read again."""
        journal = self.mirror.open_journal()
        count = self.adapter.revisions.count
        problems = []
        try:
            yield problems
        finally:
            self.mirror.close_journal(journal)
            found = self._verify(journal, Before(self.mirror, journal))
            if not found:
                self.adapter.revisions.count = count
            problems.extend(found)
