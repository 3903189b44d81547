"""A double of the Revit API for plain CPython: the members the Nexus
guidance teaches and the add-in uses, each behaving as the Revit API
reference documents it (the page is cited where the behaviour is
implemented). Scripts import it as Revit's own namespaces
(Autodesk.Revit.DB, Autodesk.Revit.UI, ...), which the Autodesk package next
to this one maps here. Session opens a project and plays Revit's API
thread."""
from .ui import Session

__all__ = ["Session"]
