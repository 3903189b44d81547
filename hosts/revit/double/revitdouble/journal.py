"""An element's data as the document keeps it: a dict that tells its
document before every change, so each open transaction scope keeps the
element's values from before its first change (the scope's journal) instead
of a copy of the whole project."""
import copy


class Data(dict):
    __slots__ = ("_owner",)

    def __init__(self, owner, values=()):
        super().__init__(values)
        self._owner = owner

    def _changing(self):
        el = self._owner
        doc = el._doc
        if el._id is not None and doc._snapshots and doc._elements.get(el._id) is el:
            doc._journal(el)

    def __setitem__(self, key, value):
        self._changing()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._changing()
        super().__delitem__(key)

    def pop(self, *args):
        self._changing()
        return super().pop(*args)

    def popitem(self):
        self._changing()
        return super().popitem()

    def setdefault(self, key, default=None):
        if key not in self:
            self._changing()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        self._changing()
        super().update(*args, **kwargs)

    def clear(self):
        self._changing()
        super().clear()

    def __deepcopy__(self, memo):
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}
