"""The served document's element states, kept in memory so that what the
add-in does around a script costs by what the script touched, never by the
size of the project.

When the add-in connects, the mirror reads every element's state (state.py)
in slices during Revit's Idling event, each slice reading for at most
SLICE_SECONDS and asking Revit to raise Idling again without delay, so Revit
never freezes for the whole read. From then on every DocumentChanged (a
script's, the person's, another add-in's, an undo) re-reads the states of
the ids it names and forgets the deleted ones, so the mirror is the document
as it is. A transaction opens a journal: before the mirror takes a new state
of an element, each open journal keeps the state from before, so "before" is
the journal for what changed and the mirror for the rest, and what the
transaction changed is read only for the ids Revit named."""
import threading
import time

from nexus_revit.ids import element_id, id_value
from nexus_revit.state import element_state

# An Idling slice reads elements for at most this long.
SLICE_SECONDS = 0.04
# What a journal holds for an element that did not exist before.
ABSENT = None


def state_of(el):
    """element_state, or for an element the API fails to describe a state
    saying so (compared like any other), so one odd element never stops the
    read or a script."""
    try:
        return element_state(el)
    except Exception as exc:
        return (type(el).__name__, "", "", -1, -1, None, (("unreadable", type(exc).__name__),), False)


class Before:
    """The document's states before a transaction, as a read-only mapping:
    the journal's for what changed since it opened, the mirror's for the
    rest (nothing changed them)."""

    def __init__(self, mirror, journal):
        self._mirror, self._journal = mirror, journal

    def get(self, i, default=None):
        if i in self._journal:
            s = self._journal[i]
            return default if s is ABSENT else s
        return self._mirror.states.get(i, default)

    def __contains__(self, i):
        return self.get(i) is not None

    def __getitem__(self, i):
        s = self.get(i)
        if s is None:
            raise KeyError(i)
        return s


class Mirror:
    def __init__(self, uiapp, doc):
        self.uiapp = uiapp
        self.doc = doc
        self.states = {}
        self.journals = []
        # The ids still to read (two .NET lists of ElementId: instances,
        # types) and where the read has come to; None before it began and
        # once the whole document was read.
        self._ids = None
        self._counts = []
        self._list = self._pos = 0
        self.complete = False
        self.slices = 0
        # Set once the whole project was read (by the slices or at once).
        self.done = threading.Event()
        uiapp.Idling += self._on_idling

    def detach(self):
        self.uiapp.Idling -= self._on_idling

    def _on_idling(self, sender, args):
        if self.complete:
            return
        self.read(time.perf_counter() + SLICE_SECONDS)
        self.slices += 1
        if self.complete:
            self.uiapp.Idling -= self._on_idling
        else:
            args.SetRaiseWithoutDelay()

    def read(self, deadline=None):
        """Reads element states until deadline (time.perf_counter()), or to
        the end with None; answers how many it read."""
        from Autodesk.Revit.DB import FilteredElementCollector
        if self.complete:
            return 0
        if self._ids is None:
            # Held across slices: lists of ids, not enumerators of the
            # document, so they stay valid between Idling calls. Each
            # collector has a slice of its own.
            ids = FilteredElementCollector(self.doc).WhereElementIsNotElementType().ToElementIds()
            self._ids, self._counts, self._list, self._pos = [ids], [ids.Count], 0, 0
            if deadline is not None:
                return 0
        if len(self._ids) == 1 and self._list == 1:
            ids = FilteredElementCollector(self.doc).WhereElementIsElementType().ToElementIds()
            self._ids.append(ids)
            self._counts.append(ids.Count)
            if deadline is not None:
                return 0
        doc, states, n = self.doc, self.states, 0
        while self._list < len(self._ids):
            ids, count = self._ids[self._list], self._counts[self._list]
            while self._pos < count:
                if deadline is not None and n % 16 == 0 and time.perf_counter() > deadline:
                    return n
                eid = ids[self._pos]
                self._pos += 1
                i = id_value(eid)
                if i in states:
                    continue  # DocumentChanged read it already
                el = doc.GetElement(eid)
                if el is not None:
                    states[i] = state_of(el)
                    n += 1
            self._list, self._pos = self._list + 1, 0
            if self._list == 1:
                return n + self.read(deadline)
        self._ids, self.complete = None, True
        self.done.set()
        return n

    def progress(self):
        """Where the read on Connect has come to, for the Status button."""
        if self.complete:
            return "project read: %d elements, kept current from every change" % len(self.states)
        total = sum(self._counts) if self._ids is not None else 0
        if total:
            return "reading the project while Revit is idle: %d of %d elements" % (len(self.states), total)
        return "reading the project while Revit is idle: %d elements so far" % len(self.states)

    def open_journal(self):
        journal = {}
        self.journals.append(journal)
        return journal

    def close_journal(self, journal):
        if journal in self.journals:
            self.journals.remove(journal)

    def changed(self, added, modified, deleted):
        """DocumentChanged's three id lists (ints): the journals keep what
        was, the mirror takes what is."""
        doc = self.doc
        for i in added + modified:
            for journal in self.journals:
                if i not in journal:
                    journal[i] = self.states.get(i, ABSENT)
            el = doc.GetElement(element_id(i))
            if el is not None:
                self.states[i] = state_of(el)
            else:
                self.states.pop(i, None)
        for i in deleted:
            for journal in self.journals:
                if i not in journal:
                    journal[i] = self.states.get(i, ABSENT)
            self.states.pop(i, None)

    def read_now(self, ids):
        """The states of ids read from the document now (a verification, not
        the mirror's): {id: state or ABSENT}."""
        out = {}
        for i in ids:
            el = self.doc.GetElement(element_id(i))
            out[i] = state_of(el) if el is not None else ABSENT
        return out
