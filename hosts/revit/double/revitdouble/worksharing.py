"""A workshared project: worksets, who owns what, and the failure Revit
posts when a transaction edits what another person owns.

Document.IsWorkshared says whether the project is workshared; its elements
belong to worksets (Element.WorksetId), which FilteredWorksetCollector lists
and WorksetTable names (https://www.revitapidocs.com/2025/ae7857a0-4e9b-f9c1-84c7-8b250af68068.htm
for WorksharingUtils). WorksharingUtils.GetCheckoutStatus answers whether an
element is not owned, owned by the current user or by another, with the
owner through its out parameter ("The owner of the element, or an empty
string if no one owns it"; pythonnet answers the pair), from "a locally
cached value" (https://rvtdocs.com/2027/Autodesk.Revit.DB.WorksharingUtils.GetCheckoutStatus(Document,ElementId,String)).
Editing an element someone else borrowed, or one in a workset someone else
has made editable, fails at commit: BuiltInFailures.EditingFailures
CannotEditElements ("Workset is editable, but you can't edit the element
until '[Borrowers]' resaves the element to central and relinquishes it and
you Reload Latest.", https://apidocs.co/apps/revit/2026/98a28123-c0ca-9718-f32a-3d2697ad7fd0.htm)
and OwnedByOther ("Can't edit the element until '[Partition Name]' resaves
the element to central and relinquishes it and you Reload Latest.",
https://apidocs.co/apps/revit/2026/deeb7398-a055-53b7-d797-a643d9780a31.htm),
errors that roll the transaction back.

The double never synchronizes with a central model; _share(doc, ...) makes
its project workshared as a central model would have it."""

from .errors import ArgumentException, require
from .ids import NetList
from .netenum import NetEnum
from .transactions import FailureSeverity

CANNOT_EDIT_BORROWED = ("Workset is editable, but you can't edit the element until '%s' resaves the element to "
                        "central and relinquishes it and you Reload Latest.")
OWNED_BY_OTHER = ("Can't edit the element until '%s' resaves the element to central and relinquishes it and you "
                  "Reload Latest.")


class CheckoutStatus(NetEnum):
    OwnedByCurrentUser = 0
    OwnedByOtherUser = 1
    NotOwned = 2


class WorksetKind(NetEnum):
    OtherWorkset = 0
    UserWorkset = 1
    FamilyWorkset = 2
    StandardWorkset = 3
    ViewWorkset = 4


class WorksetId:
    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("No constructor of WorksetId matches (%s); pass an integer" % type(value).__name__)
        self._value = int(value)

    IntegerValue = property(lambda self: self._value)

    def Compare(self, other):
        return (self._value > other._value) - (self._value < other._value)

    def __eq__(self, other):
        return isinstance(other, WorksetId) and other._value == self._value

    def __hash__(self):
        return hash(("workset", self._value))

    def ToString(self):
        return str(self._value)

    def __str__(self):
        return str(self._value)


WorksetId.InvalidWorksetId = WorksetId(-1)


class Workset:
    def __init__(self, shared, wid):
        self._shared, self._id = shared, wid

    def _row(self):
        return self._shared.worksets[self._id]

    Id = property(lambda self: WorksetId(self._id))
    Name = property(lambda self: self._row()["name"])
    Kind = property(lambda self: self._row()["kind"])
    Owner = property(lambda self: self._row()["owner"])
    IsEditable = property(lambda self: self._row()["owner"] == self._shared.user)
    IsOpen = property(lambda self: True)
    IsVisibleByDefault = property(lambda self: True)
    IsDefaultWorkset = property(lambda self: self._id == self._shared.active)
    IsValidObject = property(lambda self: True)


class WorksetTable:
    def __init__(self, doc):
        self._doc = doc

    def GetWorkset(self, worksetId):
        require(worksetId, "worksetId")
        shared = _shared(self._doc)
        if shared is None or worksetId.IntegerValue not in shared.worksets:
            return None
        return Workset(shared, worksetId.IntegerValue)

    def GetActiveWorksetId(self):
        shared = _shared(self._doc)
        return WorksetId(shared.active) if shared is not None else WorksetId.InvalidWorksetId


class FilteredWorksetCollector:
    def __init__(self, document):
        self._doc = require(document, "document")
        self._kind = None

    def OfKind(self, worksetKind):
        self._kind = WorksetKind(worksetKind)
        return self

    def _matches(self):
        shared = _shared(self._doc)
        if shared is None:
            return []
        return [Workset(shared, i) for i, row in sorted(shared.worksets.items())
                if self._kind is None or row["kind"] == self._kind]

    def ToWorksets(self):
        return NetList(self._matches())

    def ToWorksetIds(self):
        return NetList(w.Id for w in self._matches())

    def FirstWorkset(self):
        found = self._matches()
        return found[0] if found else None

    def __iter__(self):
        return iter(self._matches())


class WorksharingTooltipInfo:
    def __init__(self, creator, owner, last_changed_by):
        self._creator, self._owner, self._last = creator, owner, last_changed_by

    Creator = property(lambda self: self._creator)
    Owner = property(lambda self: self._owner)
    LastChangedBy = property(lambda self: self._last)
    IsValidObject = property(lambda self: True)


class WorksharingUtils:
    @staticmethod
    def GetCheckoutStatus(document, elementId, *owner):
        require(document, "document")
        require(elementId, "elementId")
        if len(owner) > 1:
            raise ArgumentException("GetCheckoutStatus takes a document, an element id and an out owner")
        who = _owner(document, elementId._value)
        shared = _shared(document)
        if not who:
            status = CheckoutStatus.NotOwned
        elif shared is not None and who == shared.user:
            status = CheckoutStatus.OwnedByCurrentUser
        else:
            status = CheckoutStatus.OwnedByOtherUser
        return (status, who) if owner else status

    @staticmethod
    def GetWorksharingTooltipInfo(document, elementId):
        require(document, "document")
        require(elementId, "elementId")
        shared = _shared(document)
        if shared is None:
            raise ArgumentException("The document is not workshared.")
        i = elementId._value
        return WorksharingTooltipInfo(shared.creators.get(i, shared.user), _owner(document, i),
                                      shared.changed_by.get(i, shared.creators.get(i, shared.user)))


class _Shared:
    """What the central model and this local copy know: the user, worksets
    by id ({name, kind, owner}), the active one, each element's workset and
    who borrowed which element."""

    def __init__(self, user):
        self.user = user
        self.worksets = {}
        self.active = None
        self.workset_of = {}
        self.borrowed = {}
        self.creators = {}
        self.changed_by = {}


def _shared(doc):
    return getattr(doc, "_worksharing", None)


def _owner(doc, i):
    """Who owns element i: its borrower, or the owner of its workset."""
    shared = _shared(doc)
    if shared is None:
        return ""
    if i in shared.borrowed:
        return shared.borrowed[i]
    wid = shared.workset_of.get(i)
    row = shared.worksets.get(wid)
    return row["owner"] if row is not None else ""


def _share(doc, user, worksets, active):
    """Makes doc workshared for user: worksets is [(id, name, kind,
    owner)], active the workset new elements go to."""
    shared = _Shared(user)
    for wid, name, kind, owner in worksets:
        shared.worksets[wid] = {"name": name, "kind": WorksetKind(kind), "owner": owner}
    shared.active = active
    doc._worksharing = shared
    return shared


def _workset_of(doc, element_id):
    shared = _shared(doc)
    if shared is None:
        return -1
    return shared.workset_of.get(element_id, shared.active)


def ownership_failures(doc, diff):
    """The errors a commit posts for each element the transaction changed
    or deleted that another user owns."""
    shared = _shared(doc)
    if shared is None:
        return []
    from .ids import ElementId
    _, modified, deleted = diff
    out = []
    for i in list(modified) + list(deleted):
        who = _owner(doc, i)
        if who and who != shared.user:
            text = (CANNOT_EDIT_BORROWED if i in shared.borrowed else OWNED_BY_OTHER) % who
            out.append((FailureSeverity.Error, text, [ElementId(i)]))
    return out
