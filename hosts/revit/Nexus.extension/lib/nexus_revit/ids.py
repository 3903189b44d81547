"""Element ids as Revit 2024 and later report them (ElementId.Value, 64-bit),
with the older IntegerValue only where the running Revit lacks Value."""


def id_value(element_id):
    value = getattr(element_id, "Value", None)
    if value is None:
        value = element_id.IntegerValue
    return int(value)


def element_id(value):
    from Autodesk.Revit.DB import ElementId
    try:
        return ElementId(int(value))
    except TypeError:
        # Revit 2024+ has ElementId(Int64); under pythonnet an int picks it.
        import System
        return ElementId(System.Int64(int(value)))


def id_list(ids):
    """A .NET List[ElementId] (the API's ICollection parameters want one);
    the double's System namespace gives one too; a plain list where there is
    no System."""
    try:
        from System.Collections.Generic import List
        from Autodesk.Revit.DB import ElementId
        out = List[ElementId]()
        for i in ids:
            out.Add(i)
        return out
    except ImportError:
        return list(ids)
