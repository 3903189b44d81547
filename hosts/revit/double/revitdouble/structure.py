"""Autodesk.Revit.DB.Structure."""
from .walls import StructuralType

__all__ = ["StructuralType"]
