"""Document and Application: the element table, the transaction scopes that
guard every change, and the DocumentChanged event."""
import copy

from . import errors
from .errors import (ArgumentException, InvalidOperationException, ModificationForbiddenException,
                     ModificationOutsideTransactionException, require)
from .ids import ElementId, NetList, id_of
from .journal import Data as _Data
from .transactions import (FailureProcessingResult, FailureSeverity, FailuresAccessor, TransactionStatus)
from .netenum import NetEnum

# New elements get ids from here up, as a Revit project's do once its template elements are in.
FIRST_NEW_ID = 300000


class UndoOperation(NetEnum):
    """DocumentChangedEventArgs.Operation
    (https://www.revitapidocs.com/2020/d5c8c31a-3b69-48c0-feac-b176a54e7934.htm)."""
    TransactionCommitted = 0
    TransactionRolledBack = 1
    TransactionGroupRolledBack = 2
    TransactionUndone = 3
    TransactionRedone = 4


class DocumentChangedEventArgs:
    """The three id sets of one change
    (https://www.revitapidocs.com/2026/8fd170b2-df48-209b-438e-54ec7b01b664.htm)."""

    def __init__(self, doc, added, modified, deleted, names, operation):
        self._doc = doc
        self._added, self._modified, self._deleted = added, modified, deleted
        self._names, self._operation = names, operation

    Operation = property(lambda self: self._operation)

    def GetDocument(self):
        return self._doc

    def GetAddedElementIds(self, element_filter=None):
        return NetList(ElementId(i) for i in self._added)

    def GetModifiedElementIds(self, element_filter=None):
        return NetList(ElementId(i) for i in self._modified)

    def GetDeletedElementIds(self):
        return NetList(ElementId(i) for i in self._deleted)

    def GetTransactionNames(self):
        return NetList(self._names)


class Event:
    """A .NET event as pythonnet shows it: handlers join with += and leave
    with -=."""

    def __init__(self):
        self._handlers = []

    def __iadd__(self, handler):
        self._handlers.append(handler)
        return self

    def __isub__(self, handler):
        # .NET removes a delegate equal to the one given (a bound method
        # of the same object is equal, not identical).
        self._handlers = [h for h in self._handlers if h != handler]
        return self

    def fire(self, sender, args):
        for h in list(self._handlers):
            h(sender, args)


class Application:
    """Autodesk.Revit.ApplicationServices.Application: the version the
    double plays and the DocumentChanged event, which "is raised whenever a
    Revit transaction is either committed, undone or redone" and is read-only
    (https://www.revitapidocs.com/2022/988dd6cf-fcaa-85d2-622d-c50f13917a13.htm)."""

    def __init__(self, version=2026):
        self._version = int(version)
        ElementId._version = self._version
        self.DocumentChanged = Event()
        self._documents = NetList()
        self._active_uidoc = None

    Documents = property(lambda self: self._documents)

    VersionNumber = property(lambda self: str(self._version))
    VersionName = property(lambda self: "Autodesk Revit %d" % self._version)
    VersionBuild = property(lambda self: "%d.0.0.0 (double)" % (self._version - 2000))
    SubVersionNumber = property(lambda self: "%d.0" % self._version)
    Language = property(lambda self: "English_USA")

    @property
    def ShortCurveTolerance(self):
        from .geometry import SHORT_CURVE_TOLERANCE
        return SHORT_CURVE_TOLERANCE


class Document:
    def __init__(self, app, title="Project1"):
        self._app = app
        self._title = title
        self._elements = {}
        self._next_id = 1
        self._txn = None
        self._subs = []
        self._groups = []
        # One snapshot per open scope: the transaction's, each sub's, each group's.
        self._snapshots = {}
        self._read_only_reason = ""
        self._closed = False
        self._pending_failures = []
        self._default_wall = -1
        # Ids a rollback put back (failures' line index); ids changed since the rooms' index looked.
        self._restored, self._changed = set(), set()
        self._last_warnings = []
        from .creation import CreationDocument
        self._create = CreationDocument(self)
        app._documents.Add(self)

    Create = property(lambda self: self._create)

    @property
    def Phases(self):
        from .phases import PhaseArray, phases
        return PhaseArray(phases(self))

    Title = property(lambda self: self._title)
    PathName = property(lambda self: "")
    IsFamilyDocument = property(lambda self: False)
    IsReadOnly = property(lambda self: False)
    IsValidObject = property(lambda self: not self._closed)
    # A workshared project (worksharing._share) keeps its worksets here.
    IsWorkshared = property(lambda self: getattr(self, "_worksharing", None) is not None)
    Application = property(lambda self: self._app)

    @property
    def IsModifiable(self):
        return self._txn is not None and not self._read_only_reason

    @property
    def ActiveView(self):
        from .views import View3D
        return next((e for e in self._elements.values() if isinstance(e, View3D) and not e.IsTemplate), None)

    # Element table -----------------------------------------------------

    def GetElement(self, ref):
        """By ElementId (or its unique id string); None when there is none."""
        require(ref, "id")
        if isinstance(ref, str):
            return next((e for e in self._elements.values() if e.UniqueId == ref), None)
        if not isinstance(ref, ElementId):
            raise TypeError("GetElement expects an ElementId or a unique id string, got %s" % type(ref).__name__)
        return self._elements.get(id_of(ref))

    def _add(self, element, element_id=None):
        self._guard()
        if element_id is None:
            element_id = max(self._next_id, FIRST_NEW_ID)
        self._next_id = max(self._next_id, element_id + 1)
        element._id = element_id
        self._journal(element, (None, None))
        self._elements[element_id] = element
        return element

    def _seed(self, element, element_id):
        """Adds a template element without a transaction (the project as
        opened)."""
        element._id = element_id
        self._elements[element_id] = element
        self._changed.add(element_id)
        self._next_id = max(self._next_id, element_id + 1)
        return element

    def _guard(self):
        """Every change passes here: none outside a transaction."""
        if self._read_only_reason:
            raise ModificationForbiddenException(self._read_only_reason)
        if self._txn is None:
            raise ModificationOutsideTransactionException(errors.OUTSIDE_TRANSACTION)

    def Delete(self, ids):
        """Deletes the element "and any elements that are totally dependent
        upon that element" (a wall's doors and windows, a level's elements on
        it) and answers every deleted id
        (https://www.revitapidocs.com/2025/a0461dd1-71d9-4581-1604-2ef8c211dd60.htm)."""
        require(ids, "elementId")
        wanted = [ids] if isinstance(ids, ElementId) else list(ids)
        self._guard()
        gone = []
        for eid in wanted:
            el = self._elements.get(id_of(eid))
            if el is None:
                raise ArgumentException("The element %s does not exist in the document" % eid)
            if not el._deletable():
                raise ArgumentException("ElementId %s cannot be deleted." % eid)
        for eid in wanted:
            self._delete_tree(id_of(eid), gone)
        return NetList(ElementId(i) for i in gone)

    def _delete_tree(self, element_id, gone):
        el = self._elements.get(element_id)
        if el is None:
            return
        for dep in el._dependents():
            self._delete_tree(dep, gone)
        el._before_delete()
        self._journal(el)
        del self._elements[element_id]
        gone.append(element_id)

    def GetDefaultElementTypeId(self, group):
        """The double knows one group: the wall type a wall gets by default."""
        return self._default_wall_type()

    def _default_wall_type(self):
        return ElementId(self._default_wall)

    def Regenerate(self):
        self._guard()

    def _post_failure(self, severity, text, element_ids):
        self._pending_failures.append((severity, text, [ElementId(i) for i in element_ids]))

    # Scopes ------------------------------------------------------------

    def _snapshot(self):
        """A scope's journal, empty when it opens: each element's id and its
        data as it was before the scope first changed it (None for an element
        the scope added), so a rollback and a diff cost by what the scope
        touched, as Revit's own undo does, never by the size of the project."""
        return ({}, self._next_id)

    def _journal(self, element, data=None):
        """Called before each change of element in a scope: marks it for the
        indexes, and each open scope not yet holding it keeps its data from
        before (data None: the element is new)."""
        self._changed.add(element._id)
        for journal, _ in self._snapshots.values():
            if element._id not in journal:
                journal[element._id] = (element, copy.deepcopy(dict(element._data))) if data is None else data

    def _restore(self, snap):
        journal, next_id = snap
        # An element the scope created is simply gone: IsValidObject turns
        # False because the table no longer holds it.
        self._restored.update(journal)
        self._changed.update(journal)
        for i, (e, data) in journal.items():
            if e is None:
                self._elements.pop(i, None)
            else:
                e._data = _Data(e, copy.deepcopy(data))
                self._elements[i] = e
        self._next_id = next_id

    def _diff(self, snap):
        journal, _ = snap
        added, modified, deleted = [], [], []
        for i, (e, data) in journal.items():
            now = self._elements.get(i)
            if e is None:
                if now is not None:
                    added.append(i)
            elif now is None:
                deleted.append(i)
            elif now._data != data:
                modified.append(i)
        return sorted(added), sorted(modified), sorted(deleted)

    def _refuse_start(self, what):
        if self._closed:
            raise InvalidOperationException("The document is closed.")
        if self._read_only_reason:
            raise InvalidOperationException(
                "Starting a new %s is not permitted: %s" % (what, self._read_only_reason))

    def _open_transaction(self, t):
        self._refuse_start("transaction")
        if self._txn is not None:
            raise InvalidOperationException(
                "Starting a new transaction is not permitted. It could be because another transaction already "
                "started and has not been completed yet.")
        self._txn = t
        self._pending_failures = []
        self._snapshots[id(t)] = self._snapshot()

    def _end_transaction(self, t):
        self._txn = None
        self._snapshots.pop(id(t), None)

    def _commit_transaction(self, t, options):
        if self._subs:
            raise InvalidOperationException("A sub-transaction is still open; it must be closed inside its transaction.")
        snap = self._snapshots[id(t)]
        messages = self._failures(snap)
        accessor = FailuresAccessor(self, messages)
        result = FailureProcessingResult.Continue
        pre = options.GetFailuresPreprocessor()
        if pre is not None and messages:
            result = pre.PreprocessFailures(accessor)
        errors_left = accessor.GetSeverity() >= FailureSeverity.Error
        if result == FailureProcessingResult.ProceedWithRollBack or errors_left:
            self._restore(snap)
            self._end_transaction(t)
            return TransactionStatus.RolledBack
        added, modified, deleted = self._diff(snap)
        self._end_transaction(t)
        self._last_warnings = [m.GetDescriptionText() for m in accessor.GetFailureMessages()]
        if added or modified or deleted:
            self._raise_changed(added, modified, deleted, [t.GetName()], UndoOperation.TransactionCommitted)
        return TransactionStatus.Committed

    def _failures(self, snap):
        from .failures import model_failures
        posted = self._pending_failures
        self._pending_failures = []
        from .transactions import FailureMessageAccessor
        found = model_failures(self, self._diff(snap))
        return [FailureMessageAccessor(s, text, ids) for s, text, ids in posted + found]

    def _rollback_transaction(self, t):
        for sub in list(self._subs):
            self._snapshots.pop(id(sub), None)
        self._subs = []
        self._restore(self._snapshots[id(t)])
        self._end_transaction(t)

    def _open_sub(self, s):
        if self._txn is None:
            raise InvalidOperationException("A sub-transaction can only be active inside an open Transaction.")
        self._subs.append(s)
        self._snapshots[id(s)] = self._snapshot()

    def _close_sub(self, s, keep):
        if not self._subs or self._subs[-1] is not s:
            raise InvalidOperationException("An inner sub-transaction must be closed before its parent.")
        self._subs.pop()
        snap = self._snapshots.pop(id(s))
        if not keep:
            self._restore(snap)

    def _open_group(self, g):
        self._refuse_start("transaction group")
        if self._txn is not None:
            raise InvalidOperationException("Transaction group cannot be started during an active transaction.")
        self._groups.append(g)
        self._snapshots[id(g)] = self._snapshot()

    def _close_group(self, g, keep):
        if self._txn is not None:
            raise InvalidOperationException(
                "A transaction group can be closed only when all transactions inside it are finished.")
        if not self._groups or self._groups[-1] is not g:
            raise InvalidOperationException("An inner transaction group must be closed before its parent.")
        self._groups.pop()
        snap = self._snapshots.pop(id(g))
        if keep:
            return
        added, modified, deleted = self._diff(snap)
        self._restore(snap)
        if added or modified or deleted:
            # Undoing the group's transactions is itself a change: what they
            # added is deleted, what they deleted comes back.
            self._raise_changed(deleted, modified, added, [g.GetName()], UndoOperation.TransactionGroupRolledBack)

    def _raise_changed(self, added, modified, deleted, names, operation):
        args = DocumentChangedEventArgs(self, added, modified, deleted, names, operation)
        self._read_only_reason = "the document is read-only while DocumentChanged handlers run"
        try:
            self._app.DocumentChanged.fire(self._app, args)
        finally:
            self._read_only_reason = ""

    # Export and lifetime -----------------------------------------------

    def ExportImage(self, options):
        from .export import export_image
        export_image(self, require(options, "options"))

    def Close(self, save_modified=False):
        if self._txn is not None or self._groups:
            raise InvalidOperationException("The document has an open transaction or transaction group.")
        self._closed = True
        if self in self._app.Documents:
            self._app.Documents.remove(self)
        return True

    def GetWorksetTable(self):
        from .worksharing import WorksetTable
        return WorksetTable(self)

    def GetUnits(self):
        from .units import Units
        return Units()
