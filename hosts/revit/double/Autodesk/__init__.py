"""Revit's namespaces, mapped onto the double (revitdouble)."""
