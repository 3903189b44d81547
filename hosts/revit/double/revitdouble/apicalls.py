"""What reading the project costs: the double counts every call of a Revit
API member (a method, a property read or write, one step of iterating a
collection) that crosses from Python into the API, which in Revit is a call
through pythonnet into .NET. Calls the double makes inside itself are not
counted. Each call is counted under who made it: the add-in (its package and
the host kit), the change report (the epilogue) or the script, so a benchmark
can read what the add-in does around a script apart from what the script
does. The session keeps the counter (Session._api_calls)."""
import collections
import enum
import functools
import os
import sys

_DOUBLE = (os.path.dirname(os.path.abspath(__file__)),
           os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Autodesk"))
ADDIN, EPILOGUE, SCRIPT = "add-in", "epilogue", "script"


class Counter:
    """Calls by who made them and by member; reset between requests."""

    def __init__(self):
        self.by_caller = collections.Counter()
        self.by_member = collections.Counter()

    def add(self, who, member, n=1):
        self.by_caller[who] += n
        self.by_member[(who, member)] += n

    def reset(self):
        self.by_caller.clear()
        self.by_member.clear()

    def snapshot(self):
        return dict(self.by_caller)


def _who(frame):
    """Who made the call from frame: None inside the double."""
    name = frame.f_code.co_filename
    if name.startswith(_DOUBLE):
        return None
    if name == "<nexus-epilogue>":
        return EPILOGUE
    if name.startswith("<") or "nexus_revit" not in name and "hostkit" not in name:
        return SCRIPT
    return ADDIN


def _counter():
    s = sys.modules["revitdouble.ui"].Session.current
    return s._api_calls if s is not None else None


def _wrap(fn, member):
    if getattr(fn, "_counted", False):
        return fn

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        who = _who(sys._getframe(1))
        if who is not None:
            c = _counter()
            if c is not None:
                c.add(who, member)
        return fn(*args, **kwargs)
    counted._counted = True
    return counted


def _wrap_iter(fn, member):
    if getattr(fn, "_counted", False):
        return fn

    @functools.wraps(fn)
    def counted(self):
        it = fn(self)
        who = _who(sys._getframe(1))
        c = _counter() if who is not None else None
        if c is None:
            return it
        c.add(who, member)
        return _Steps(it, c, who, member)
    counted._counted = True
    return counted


class _Steps:
    """An enumerator whose every MoveNext is a call."""
    __slots__ = ("_it", "_c", "_who", "_member")

    def __init__(self, it, c, who, member):
        self._it, self._c, self._who, self._member = it, c, who, member

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self._it)
        self._c.add(self._who, self._member)
        return item


def instrument(classes):
    """Wraps every public member of each API class (enums and exceptions
    aside) so its calls are counted; wrapping twice changes nothing."""
    from .ids import NetList
    if "__iter__" not in vars(NetList):
        # A .NET List: each step of an enumeration and each indexed read is a call.
        NetList.__iter__ = _wrap_iter(list.__iter__, "List.MoveNext")
        NetList.__getitem__ = _wrap(list.__getitem__, "List.get_Item")
    for cls in classes:
        if not isinstance(cls, type) or issubclass(cls, (enum.Enum, BaseException)):
            continue
        for name, value in list(vars(cls).items()):
            member = "%s.%s" % (cls.__name__, name)
            if name == "__iter__":
                setattr(cls, name, _wrap_iter(value, member + ".MoveNext"))
            elif name.startswith("_"):
                continue
            elif isinstance(value, property):
                setattr(cls, name, property(_wrap(value.fget, member) if value.fget else None,
                                            _wrap(value.fset, member) if value.fset else None,
                                            value.fdel, value.__doc__))
            elif isinstance(value, staticmethod):
                setattr(cls, name, staticmethod(_wrap(value.__func__, member)))
            elif isinstance(value, classmethod):
                setattr(cls, name, classmethod(_wrap(value.__func__, member)))
            elif callable(value) and not isinstance(value, type):
                setattr(cls, name, _wrap(value, member))


def api_classes():
    """The classes of the double's API namespaces."""
    import importlib
    out = []
    for module in ("Autodesk.Revit.DB", "Autodesk.Revit.DB.Events", "Autodesk.Revit.DB.Structure",
                   "Autodesk.Revit.UI", "Autodesk.Revit.UI.Events", "Autodesk.Revit.ApplicationServices"):
        try:
            m = importlib.import_module(module)
        except ImportError:
            continue
        out.extend(v for k, v in vars(m).items() if not k.startswith("_") and isinstance(v, type))
    out.append(__import__("revitdouble.ids", fromlist=["NetList"]).NetList)
    return list(dict.fromkeys(out))
