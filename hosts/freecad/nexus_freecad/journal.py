"""The document as it was before a script, read only where the script
reaches: a document observer keeps each object's values as they were just
before the first change to it (FreeCAD announces every property about to be
set, every dynamic property added or removed and every object deleted, and
undo sets values through the same path), so an object the journal holds no
values of has not changed since the script began. Reading every property of
every object before each script costs about a millisecond an object; the
journal reads only names and states up front (what changes with no property
set: touch() and recompute flip Touched and Invalid) and the values of the
objects something changes, when it does.

The journal must see every change from the script's start to the last
comparison: it is attached before the script and closed only once the
rollback is verified or the commit made, and closed before a document is
reloaded, whose restore would read as changes."""

from nexus_freecad import digest


class _StateOnly(object):
    """What the journal knows of an object no value of which changed."""
    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state


class Journal(object):
    def __init__(self, app, doc):
        self.app = app
        self.doc_name = doc.Name
        objects = doc.Objects
        # Document order: the change lists keep it.
        self.names = [o.Name for o in objects]
        self.start = set(self.names)
        self.states = {o.Name: digest.state_of(o) for o in objects}
        self.values = {}
        self.attached = True
        app.addDocumentObserver(self)

    def close(self):
        if self.attached:
            self.attached = False
            self.app.removeDocumentObserver(self)

    def _record(self, obj, added=None):
        """Keeps obj's values on the first change to it; added names a
        dynamic property the change has already put there."""
        try:
            name = obj.Name
            if name in self.values or name not in self.start or obj.Document.Name != self.doc_name:
                return
            values = digest.ObjectValues(obj)
        except Exception:
            return
        values.state = self.states[name]
        if added is not None:
            values.props.pop(added, None)
        self.values[name] = values

    def slotBeforeChangeObject(self, obj, _prop):
        self._record(obj)

    def slotRemoveDynamicProperty(self, obj, _prop):
        self._record(obj)

    def slotAppendDynamicProperty(self, obj, prop):
        self._record(obj, added=prop)

    def slotDeletedObject(self, obj):
        self._record(obj)

    def slotChangedObject(self, obj, _prop):
        # A change FreeCAD did not announce first (a property touched in
        # place): FreeCAD's undo cannot take it back either; from here on
        # the object is held to what it is now.
        self._record(obj)

    def before(self, name):
        """An object's values before the script, or None when none changed."""
        return self.values.get(name)

    def info(self, name):
        v = self.values.get(name)
        return dict(v.info) if v is not None else {}

    def compare(self, doc, new_props=True):
        """What differs of doc from the document before the script, as
        digest.compare answers it: objects gone or new by name, state for
        every object, values for the objects that changed."""
        out = {}
        objects = doc.Objects
        present = set()
        for o in objects:
            name = o.Name
            present.add(name)
            if name not in self.start:
                out[name] = ["(new)"]
                continue
            v = self.values.get(name)
            if v is not None:
                what = digest.differing(v, digest.ObjectValues(o), True, new_props)
            else:
                what = ["State"] if digest.state_of(o) != self.states[name] else []
            if what:
                out[name] = what
        for name in self.names:
            if name not in present:
                out[name] = ["(missing)"]
        return out

    def entries(self, names):
        """What restore needs of each object named: its values, or its state
        alone when no value of it changed."""
        return {n: self.values.get(n) or _StateOnly(self.states[n]) for n in names if n in self.start}

    def restore(self, doc, differences):
        return digest.restore(doc, self.entries(differences), differences)

    def full(self, doc):
        """The whole document before the script, as digest.capture reads it:
        what a reloaded checkpoint is compared with. Objects no value of
        which changed are read from doc as they are now. Answers the capture
        and the names it could not account for (gone with no values kept)."""
        out, lost = {}, []
        for name in self.names:
            v = self.values.get(name)
            if v is None:
                obj = doc.getObject(name)
                if obj is None:
                    lost.append(name)
                    continue
                v = digest.ObjectValues(obj)
                v.state = self.states[name]
            out[name] = v
        return out, lost
