"""pythonnet's clr module as a script under pyRevit sees it: AddReference
loads an assembly; in the double the Revit assemblies are always there."""
_KNOWN = {"RevitAPI", "RevitAPIUI", "System", "System.Core"}


def AddReference(name):
    if name not in _KNOWN:
        raise ImportError("Unable to find assembly '%s' (the Revit double provides %s)" % (name, ", ".join(sorted(_KNOWN))))
