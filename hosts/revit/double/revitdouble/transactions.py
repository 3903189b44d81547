"""Transaction, SubTransaction and TransactionGroup with the status rules of
the Revit API reference, and the failures a commit processes. The document
keeps one snapshot per open scope; a rollback puts it back whole."""

from .errors import ArgumentException, InvalidOperationException, require
from .netenum import NetEnum


class TransactionStatus(NetEnum):
    Uninitialized = 0
    Started = 1
    RolledBack = 2
    Committed = 3
    Pending = 4
    Error = 5
    Proceed = 6


class FailureSeverity(NetEnum):
    # Revit's first member is None, a Python keyword: a script reaches it as
    # getattr(FailureSeverity, "None"), as under pythonnet.
    locals()["None"] = 0
    Warning = 1
    Error = 2
    DocumentCorruption = 3


class FailureProcessingResult(NetEnum):
    Continue = 0
    ProceedWithRollBack = 1
    ProceedWithCommit = 2
    WaitForUserInput = 3


class IFailuresPreprocessor:
    """Implemented by the caller; PreprocessFailures(accessor) answers a
    FailureProcessingResult."""

    def PreprocessFailures(self, failures_accessor):
        return FailureProcessingResult.Continue


class FailureMessageAccessor:
    def __init__(self, severity, text, element_ids):
        self._severity, self._text, self._ids = severity, text, list(element_ids)

    def GetSeverity(self):
        return self._severity

    def GetDescriptionText(self):
        return self._text

    def GetFailingElementIds(self):
        from .ids import NetList
        return NetList(self._ids)


class FailuresAccessor:
    """What a failures preprocessor sees at commit: the posted messages; it
    may delete warnings (DeleteWarning), never errors."""

    def __init__(self, doc, messages):
        self._doc, self._messages = doc, list(messages)

    def GetDocument(self):
        return self._doc

    def GetFailureMessages(self):
        from .ids import NetList
        return NetList(self._messages)

    def DeleteWarning(self, message):
        if message.GetSeverity() != FailureSeverity.Warning:
            raise ArgumentException("Only warnings can be deleted; this failure is an error.")
        self._messages = [m for m in self._messages if m is not message]

    def DeleteAllWarnings(self):
        self._messages = [m for m in self._messages if m.GetSeverity() != FailureSeverity.Warning]

    def GetSeverity(self):
        return max((m.GetSeverity() for m in self._messages), default=getattr(FailureSeverity, "None"))


class FailureHandlingOptions:
    def __init__(self):
        self._preprocessor = None
        self._clear_after_rollback = False

    def SetFailuresPreprocessor(self, preprocessor):
        self._preprocessor = preprocessor
        return self

    def GetFailuresPreprocessor(self):
        return self._preprocessor

    def SetClearAfterRollback(self, value):
        self._clear_after_rollback = bool(value)
        return self


class _Named:
    """GetName and SetName, which Transaction and TransactionGroup have and
    SubTransaction has not (api/revit2017.json)."""

    def GetName(self):
        return self._name

    def SetName(self, name):
        self._name = name


class _Scope:
    """What Transaction, SubTransaction and TransactionGroup share: a
    status, IDisposable (a started scope that is disposed rolls back)."""

    def __init__(self, document, name=None):
        self._doc = require(document, "document")
        self._name = name or ""
        self._status = TransactionStatus.Uninitialized

    def GetStatus(self):
        return self._status

    def HasStarted(self):
        return self._status == TransactionStatus.Started

    def HasEnded(self):
        return self._status in (TransactionStatus.Committed, TransactionStatus.RolledBack)

    IsValidObject = property(lambda self: True)

    def Dispose(self):
        if self._status == TransactionStatus.Started:
            self.RollBack()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.Dispose()
        return False

    def _require_started(self, what):
        if self._status != TransactionStatus.Started:
            raise InvalidOperationException(
                "The current status of the %s is not 'Started'. %s must be started before calling Commit or Rollback."
                % (what, what.capitalize()))


class Transaction(_Named, _Scope):
    """https://www.revitapidocs.com/2025/1146fa87-127d-c432-0f51-79a5eb102031.htm (Start):
    a transaction starts only when it has a name, has not started already,
    and no other transaction is open in the document; otherwise
    InvalidOperationException. Commit and RollBack require status Started
    (https://www.revitapidocs.com/2025/32714010-7138-f64f-8fde-a310354448e3.htm,
    https://www.revitapidocs.com/2025/bd1e69e9-961e-1c07-f70a-a29b90c6eb97.htm);
    a commit may come back RolledBack "as an outcome of failure handling"."""

    def __init__(self, document, name=None):
        super().__init__(document, name)
        self._options = FailureHandlingOptions()

    def Start(self, name=None):
        if name is not None:
            if name == "":
                raise ArgumentException("The name argument is an empty string.")
            self._name = name
        if self._status == TransactionStatus.Started:
            raise InvalidOperationException("The transaction started already and has not been completed yet.")
        if not self._name:
            raise InvalidOperationException("The transaction does not have a valid name assigned yet.")
        self._doc._open_transaction(self)
        # "every time a transaction starts, Failure Handling Options will be
        # reset to their default values" (the Start page).
        self._options = FailureHandlingOptions()
        self._status = TransactionStatus.Started
        return self._status

    def GetFailureHandlingOptions(self):
        return self._options

    def SetFailureHandlingOptions(self, options):
        self._options = require(options, "options")

    def Commit(self, options=None):
        self._require_started("transaction")
        if options is not None:
            self._options = options
        self._status = self._doc._commit_transaction(self, self._options)
        return self._status

    def RollBack(self, options=None):
        self._require_started("transaction")
        self._doc._rollback_transaction(self)
        self._status = TransactionStatus.RolledBack
        return self._status


class SubTransaction(_Scope):
    """https://www.revitapidocs.com/2025/24a1e46d-2893-231a-cfff-a3f8e411247a.htm:
    "A sub-transaction can only be started in an open transaction, and it must
    be closed (committed or rolled back) while still inside the open
    transaction"; nested ones close before their parent."""

    def __init__(self, document):
        super().__init__(document, "")

    def Start(self):
        if self._status == TransactionStatus.Started:
            raise InvalidOperationException("The sub-transaction was already started and has not finished yet.")
        self._doc._open_sub(self)
        self._status = TransactionStatus.Started
        return self._status

    def Commit(self):
        self._require_started("sub-transaction")
        self._doc._close_sub(self, keep=True)
        self._status = TransactionStatus.Committed
        return self._status

    def RollBack(self):
        self._require_started("sub-transaction")
        self._doc._close_sub(self, keep=False)
        self._status = TransactionStatus.RolledBack
        return self._status


class TransactionGroup(_Named, _Scope):
    """https://www.revitapidocs.com/2026/f1113d30-4c36-7844-1537-aad7f095cea0.htm:
    "A transaction group can only be started when no transaction is active,
    and must be closed only after the last transaction started inside the
    group is finished"; groups nest. RollBack "effectively undoes all
    transactions committed inside the group"
    (https://www.revitapidocs.com/2026/2efcf628-bb40-bf36-a2e4-eaeca4cca461.htm);
    Commit keeps them, Assimilate merges them into one undo item."""

    def Start(self, name=None):
        if name is not None:
            self._name = name
        if self._status == TransactionStatus.Started:
            raise InvalidOperationException("The Transaction group has already been started.")
        self._doc._open_group(self)
        self._status = TransactionStatus.Started
        return self._status

    def Commit(self):
        self._require_started("transaction group")
        self._doc._close_group(self, keep=True)
        self._status = TransactionStatus.Committed
        return self._status

    def Assimilate(self):
        return self.Commit()

    def RollBack(self):
        self._require_started("transaction group")
        self._doc._close_group(self, keep=False)
        self._status = TransactionStatus.RolledBack
        return self._status
