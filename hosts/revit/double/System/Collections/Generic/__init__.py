"""System.Collections.Generic as pythonnet shows it: a generic type is
subscripted with its type argument (List[ElementId]) and then constructed,
empty or from a Python iterable; an item of the wrong type is refused, as
.NET refuses it."""


class _Generic:
    """List[T], HashSet[T], Dictionary[K, V]: subscripting gives the closed type."""

    def __init__(self, make):
        self._make = make
        self._closed = {}

    def __getitem__(self, args):
        args = args if isinstance(args, tuple) else (args,)
        if args not in self._closed:
            self._closed[args] = self._make(*args)
        return self._closed[args]


def _check(t, item):
    if t is not object and not isinstance(item, t):
        raise TypeError("No method matches given arguments: a %s cannot hold a %s" % (t.__name__, type(item).__name__))
    return item


def _list(t):
    class ListOf(list):
        def __init__(self, items=()):
            super().__init__(_check(t, i) for i in items)

        Count = property(lambda self: len(self))

        def Add(self, item):
            self.append(_check(t, item))

        def AddRange(self, items):
            self.extend(_check(t, i) for i in items)

        def Contains(self, item):
            return item in self

        def Clear(self):
            del self[:]

        def Remove(self, item):
            if item in self:
                super().remove(item)
                return True
            return False

        def ToArray(self):
            return list(self)

    ListOf.__name__ = ListOf.__qualname__ = "List[%s]" % t.__name__
    return ListOf


def _hashset(t):
    class HashSetOf(set):
        def __init__(self, items=()):
            super().__init__(_check(t, i) for i in items)

        Count = property(lambda self: len(self))

        def Add(self, item):
            fresh = item not in self
            self.add(_check(t, item))
            return fresh

        def Contains(self, item):
            return item in self

    HashSetOf.__name__ = HashSetOf.__qualname__ = "HashSet[%s]" % t.__name__
    return HashSetOf


def _dictionary(k, v):
    class DictionaryOf(dict):
        Count = property(lambda self: len(self))

        def Add(self, key, value):
            if key in self:
                raise ValueError("An item with the same key has already been added.")
            self[_check(k, key)] = _check(v, value)

        def ContainsKey(self, key):
            return key in self

        Keys = property(lambda self: list(self.keys()))
        Values = property(lambda self: list(self.values()))

    DictionaryOf.__name__ = DictionaryOf.__qualname__ = "Dictionary[%s, %s]" % (k.__name__, v.__name__)
    return DictionaryOf


List = _Generic(_list)
HashSet = _Generic(_hashset)
Dictionary = _Generic(_dictionary)
