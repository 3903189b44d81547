"""Views, Revit's way: ImageExportOptions and Document.ExportImage of a 3D
view or a level's floor plan, framed on the changed elements (a section box
on a new isometric view, or the plan's crop box) inside a transaction that is
rolled back, so taking the picture changes nothing."""
import os
import shutil
import struct
import tempfile

from hostkit import imagefit, wire
from nexus_revit import framing as framing_rules
from nexus_revit.ids import id_list, id_value

_THREE_D = ("isometric", "3d", "{3d}", "3d view")


def _png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise RuntimeError("ExportImage did not write a PNG")
    return struct.unpack(">II", data[16:24])


def _export(doc, view, pixels, vertical):
    """Exports view into a fresh folder and answers the PNG bytes: the file
    is whatever appears there, so the name Revit gives it does not matter."""
    from Autodesk.Revit.DB import (ExportRange, FitDirectionType, ImageExportOptions, ImageFileType,
                                   ImageResolution, ZoomFitType)
    folder = tempfile.mkdtemp(prefix="nexus-revit-view-")
    try:
        options = ImageExportOptions()
        options.ExportRange = ExportRange.SetOfViews
        options.SetViewsAndSheets(id_list([view.Id]))
        options.FilePath = os.path.join(folder, "nexus")
        options.ZoomType = ZoomFitType.FitToPage
        options.PixelSize = int(pixels)
        options.FitDirection = FitDirectionType.Vertical if vertical else FitDirectionType.Horizontal
        options.HLRandWFViewsFileType = ImageFileType.PNG
        options.ShadowViewsFileType = ImageFileType.PNG
        options.ImageResolution = ImageResolution.DPI_150
        doc.ExportImage(options)
        files = [f for f in os.listdir(folder) if f.lower().endswith(".png")]
        if len(files) != 1:
            raise RuntimeError("ExportImage wrote %d PNG files, expected one" % len(files))
        with open(os.path.join(folder, files[0]), "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sized(doc, view, rule):
    """Exports at the longest side the rule allows, then once more at the
    size the rule fits the view's aspect to, when that differs."""
    data = _export(doc, view, rule.max_px, False)
    w, h = _png_size(data)
    if h > w:
        data = _export(doc, view, rule.max_px, True)
        w, h = _png_size(data)
    fw, fh = imagefit.fit_image(w, h, rule)
    if (fw, fh) != (w, h):
        data = _export(doc, view, fh if fh > fw else fw, fh > fw)
        w, h = _png_size(data)
    return data, w, h


def _plan_for(doc, level_id):
    from Autodesk.Revit.DB import FilteredElementCollector, ViewPlan
    plans = [v for v in FilteredElementCollector(doc).OfClass(ViewPlan) if not v.IsTemplate]
    for v in plans:
        if level_id is not None and id_value(v.GenLevel.Id) == id_value(level_id):
            return v
    return plans[0] if plans else None


def three_d_view(doc):
    from Autodesk.Revit.DB import FilteredElementCollector, View3D
    views = [v for v in FilteredElementCollector(doc).OfClass(View3D) if not v.IsTemplate]
    return next((v for v in views if v.Name == "{3D}"), views[0] if views else None)


def _named(doc, name):
    from Autodesk.Revit.DB import FilteredElementCollector, View
    return next((v for v in FilteredElementCollector(doc).OfClass(View) if v.Name == name), None)


def _framed_export(doc, kind, window, level_id, rule):
    """Frames window in a transaction that is rolled back: a section box on
    a new isometric view, or the level plan's crop box."""
    from Autodesk.Revit.DB import (BoundingBoxXYZ, FilteredElementCollector, Transaction, View3D, ViewFamily,
                                   ViewFamilyType)
    t = Transaction(doc, "Nexus view")
    t.Start()
    try:
        box = BoundingBoxXYZ()
        box.Min, box.Max = window
        if kind == "plan":
            view = _plan_for(doc, level_id)
            view.CropBox = box
            view.CropBoxActive = True
        else:
            vft = next(v for v in FilteredElementCollector(doc).OfClass(ViewFamilyType)
                       if v.ViewFamily == ViewFamily.ThreeDimensional)
            view = View3D.CreateIsometric(doc, vft.Id)
            view.SetSectionBox(box)
        doc.Regenerate()
        return _sized(doc, view, rule)
    finally:
        t.RollBack()


def capture(doc, view, rule, framing=None, changed=None):
    """Answers (image, None) or (None, why there is no image)."""
    name = (view or "3d").strip()
    if framing is not None and changed is not None:
        region = framing_rules.affected_region(doc, changed, framing)
        if region is None:
            return None, framing_rules.no_geometry_note(doc, changed)
        window, ids, kind, level_id = region
        if window is None:
            # The change spans most of the document: the whole is shown.
            target = _plan_for(doc, level_id) if kind == "plan" else three_d_view(doc)
            data, w, h = _sized(doc, target, rule)
            framed = "document"
        else:
            framed = "changed: " + ", ".join("#%s" % i for i in ids[:20])
            data, w, h = _framed_export(doc, kind, window, level_id, rule)
        return wire.png_image(data, kind, w, h, framed), None
    if name.lower() == "plan":
        target = _plan_for(doc, None)
    elif name.lower() in _THREE_D:
        target = three_d_view(doc)
    else:
        target = _named(doc, name)
    if target is None:
        return None, "no image: the document has no view %r (try \"3d\", \"plan\" or a view's name)" % name
    data, w, h = _sized(doc, target, rule)
    return wire.png_image(data, name, w, h, "document"), None
