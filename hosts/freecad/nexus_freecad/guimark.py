"""The GUI's modified mark of a document: the asterisk on its tab and the
question on closing it. FreeCAD sets it at every change, undo included, and
clears it only on save or load; its Python attribute (the GUI document's
Modified) is read-only in FreeCAD 0.20. So a run that left a document
exactly as before puts the mark back through Gui::Document's own
setModified, called by its exported C++ symbol; where that symbol is not
found the mark stays as FreeCAD left it."""

import ctypes
import sys

# Itanium C++ names (Linux, macOS), then MSVC's (Windows).
_SYMBOLS = (
    ("_ZN3Gui11Application8InstanceE", "_ZNK3Gui11Application11getDocumentEPKc", "_ZN3Gui8Document11setModifiedEb"),
    ("?Instance@Application@Gui@@2PEAV12@EA", "?getDocument@Application@Gui@@QEBAPEAVDocument@2@PEBD@Z",
     "?setModified@Document@Gui@@QEAAX_N@Z"),
)


def _library():
    if sys.platform == "win32":
        return ctypes.WinDLL("FreeCADGui.dll")
    # The FreeCAD executable links the GUI library: its symbols are global.
    return ctypes.CDLL(None)


def _set_natively(name, modified):
    try:
        lib = _library()
    except OSError:
        return
    for instance_name, get_name, set_name in _SYMBOLS:
        try:
            instance = ctypes.c_void_p.in_dll(lib, instance_name)
            get_document = getattr(lib, get_name)
            set_modified = getattr(lib, set_name)
        except (AttributeError, ValueError):
            continue
        if not instance.value:
            return
        get_document.restype = ctypes.c_void_p
        get_document.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        set_modified.restype = None
        set_modified.argtypes = (ctypes.c_void_p, ctypes.c_bool)
        gui_doc = get_document(instance.value, name.encode("utf-8"))
        if gui_doc:
            set_modified(gui_doc, modified)
        return


def modified(gui, doc_name):
    """Whether the GUI marks the document modified; None without a GUI."""
    if not gui:
        return None
    import FreeCADGui
    gui_doc = FreeCADGui.getDocument(doc_name)
    return None if gui_doc is None else bool(gui_doc.Modified)


def set_modified(gui, doc_name, value):
    """Puts the GUI's mark of the document to value; answers whether it
    now reads so (False where FreeCAD offers no way to set it)."""
    if value is None or not gui:
        return False
    import FreeCADGui
    gui_doc = FreeCADGui.getDocument(doc_name)
    if gui_doc is None:
        return False
    if bool(gui_doc.Modified) == value:
        return True
    try:
        gui_doc.Modified = value
    except (AttributeError, TypeError):
        _set_natively(doc_name, value)
    return bool(gui_doc.Modified) == value
