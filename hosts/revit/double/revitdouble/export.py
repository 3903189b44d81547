"""ImageExportOptions and Document.ExportImage
(https://www.revitapidocs.com/2025/b98a3e71-39fa-bf7a-cb3d-591d8b1fcd93.htm):
the double draws the view's model elements as shaded boxes into a PNG at
the path ImageExportOptions.GetFileName names. A 3D view honours an active
section box, a plan its level and an active crop box."""
import os
import struct
import zlib

from . import errors
from .errors import ArgumentException, InvalidOperationException
from .ids import ElementId, NetList
from .netenum import NetEnum


class ExportRange(NetEnum):
    CurrentView = 0
    VisibleRegionOfCurrentView = 1
    SetOfViews = 2


class ZoomFitType(NetEnum):
    FitToPage = 0
    Zoom = 1


class FitDirectionType(NetEnum):
    Horizontal = 0
    Vertical = 1


class ImageFileType(NetEnum):
    BMP = 0
    JPEGLossless = 1
    PNG = 4


class ImageResolution(NetEnum):
    DPI_72 = 0
    DPI_150 = 1
    DPI_300 = 2
    DPI_600 = 3


class ImageExportOptions:
    def __init__(self):
        self.ExportRange = ExportRange.CurrentView
        self.FilePath = ""
        self.ZoomType = ZoomFitType.Zoom
        self.Zoom = 50
        self.PixelSize = 512
        self.FitDirection = FitDirectionType.Horizontal
        self.HLRandWFViewsFileType = ImageFileType.PNG
        self.ShadowViewsFileType = ImageFileType.PNG
        self.ImageResolution = ImageResolution.DPI_72
        self.ShouldCreateWebSite = False
        self.ViewName = ""
        self._views = []

    def SetViewsAndSheets(self, ids):
        self._views = list(errors.require(ids, "viewsAndSheets"))

    def GetViewsAndSheets(self):
        return NetList(self._views)

    @staticmethod
    def GetFileName(document, view_id):
        """The name part an export gives a view's file: "<view type> - <view
        name>"; the file is "<FilePath> - <that>.png". A caller that must
        find the file (the add-in does) exports into an empty folder and
        takes what appears, which holds in Revit whatever the joining."""
        from .views import ViewType
        view = document.GetElement(view_id)
        label = {ViewType.ThreeD: "3D View", ViewType.FloorPlan: "Floor Plan"}.get(view.ViewType, "View")
        return "%s - %s" % (label, view.Name)

    @staticmethod
    def IsValidFileName(name):
        return bool(name) and not any(c in name for c in '<>"|?*')


def _file_name(options, doc, view_id):
    return "%s - %s.png" % (os.path.splitext(options.FilePath)[0], ImageExportOptions.GetFileName(doc, view_id))


def export_image(doc, options):
    from .views import View
    if not options.FilePath:
        raise ArgumentException("ImageExportOptions.FilePath is empty.")
    directory = os.path.dirname(options.FilePath) or "."
    if not os.path.isdir(directory):
        raise errors.ApplicationException("The path indicated could not be found: %s" % directory)
    if options.HLRandWFViewsFileType != ImageFileType.PNG:
        raise ArgumentException("The double exports PNG only.")
    if options.ExportRange == ExportRange.SetOfViews:
        views = [doc.GetElement(i) for i in options._views]
    else:
        views = [doc.ActiveView]
    if not views or any(not isinstance(v, View) for v in views):
        raise ArgumentException("The current view cannot be exported as an image")
    size = int(options.PixelSize)
    if size < 16 or size > 15000:
        raise ArgumentException("PixelSize must be between 16 and 15000, got %d" % size)
    from .render import render_view
    for v in views:
        width, height, rows = render_view(doc, v, size, options.FitDirection == FitDirectionType.Vertical)
        with open(_file_name(options, doc, v.Id), "wb") as f:
            f.write(encode_png(width, height, rows))


def encode_png(width, height, rows):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


__all__ = ["ExportRange", "ZoomFitType", "FitDirectionType", "ImageFileType", "ImageResolution",
           "ImageExportOptions", "ElementId"]
