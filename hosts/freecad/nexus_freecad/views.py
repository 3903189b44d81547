"""Views: the capture a request asks for, framed on what a transaction
changed, rendered by the FreeCAD GUI when it runs and by the rasteriser
otherwise."""

import os
import tempfile

from hostkit.imagefit import MIN_PX, fit_image
from hostkit.wire import png_image
from nexus_freecad.framing import affected_region, no_geometry_note
from nexus_freecad.raster import render_headless


def capture(doc, gui, view, rule, framing=None, tracker=None):
    """Renders view of doc within rule; answers (image, None) or (None, why
    no image).

    With framing rules and the tracker of a committed transaction, it
    frames what the transaction changed and picks plan or isometric from
    the change; a transaction that changed no geometry gets no image.
    """
    window, names, framed = None, None, "document"
    if framing and tracker is not None:
        affected = affected_region(doc, tracker, framing)
        if affected is None:
            return None, no_geometry_note(tracker, framing)
        window, names, view = affected
        if window is not None:
            framed = "changed: " + ", ".join(names)
        else:
            names = None
    if gui:
        data, width, height = render_gui(doc, view, rule, names)
    else:
        data, width, height = render_headless(doc, view, rule, window)
    return png_image(data, view, width, height, framed), None


def render_gui(doc, view, rule, names=None):
    import FreeCADGui

    gdoc = FreeCADGui.getDocument(doc.Name)
    av = gdoc.activeView() if hasattr(gdoc, "activeView") else FreeCADGui.ActiveDocument.ActiveView
    if view == "plan":
        av.viewTop()
    elif view == "front":
        av.viewFront()
    else:
        av.viewIsometric()
    av.fitAll()
    if names:
        # Frame what changed: FreeCAD fits the view to the selection.
        FreeCADGui.Selection.clearSelection()
        for name in names:
            obj = doc.getObject(name)
            if obj is not None:
                FreeCADGui.Selection.addSelection(obj)
        FreeCADGui.SendMsgToActiveView("ViewSelection")
        FreeCADGui.Selection.clearSelection()
    width, height = fit_image(rule.max_px, max(MIN_PX, int(rule.max_px * 0.75)), rule)
    fd, path = tempfile.mkstemp(suffix=".png", prefix="nexus-view-")
    os.close(fd)
    try:
        av.saveImage(path, width, height, "White")
        with open(path, "rb") as f:
            data = f.read()
    finally:
        os.unlink(path)
    return data, width, height
