"""The project as binary glTF for the person's 3D review, through Revit's
CustomExporter: an export context collects each element's polymeshes (the
faces Revit tessellates for it), placed by the transforms of the family
instances around them, and the kit's writer (hostkit.gltf) makes one node
per element, named by its id. Revit's unit is the foot, +Z up.

Only the default 3D view ({3D}, or the first 3D view that is not a
template) is exported, so what it hides (a section box, hidden categories)
is not in the model; a linked model's elements are skipped, since they are
not this document's.
"""

from hostkit import gltf
from hostkit.wire import RequestError
from nexus_revit import views
from nexus_revit.ids import element_id, id_value

GENERATOR = "Nexus Revit add-in"
FOOT_IN_METRES = 0.3048


def _collector(doc, wanted, builder):
    """An export context (IExportContext) for doc that hands every element
    whose id is in wanted (None: all) to builder."""
    from Autodesk.Revit.DB import IExportContext, RenderNodeAction

    class Collector(IExportContext):
        # pythonnet needs a namespace on a Python class that implements a
        # .NET interface; the double ignores it.
        __namespace__ = "Nexus.Export"

        def __init__(self):
            super().__init__()
            self.transforms = []
            self.current = None
            self.names = []
            self.error = None

        def Start(self):
            return True

        def Finish(self):
            pass

        def IsCanceled(self):
            # An error raised inside a callback would cross Revit's native
            # code; it is kept and the export stops at the next element.
            return self.error is not None

        def OnViewBegin(self, node):
            return RenderNodeAction.Proceed

        def OnViewEnd(self, element_id_):
            pass

        def OnElementBegin(self, eid):
            name = str(id_value(eid))
            if wanted is not None and name not in wanted:
                return RenderNodeAction.Skip
            element = doc.GetElement(eid)
            category = element.Category.Name if element is not None and element.Category is not None else ""
            self.current = gltf.Element(name, element.Name if element is not None else "", category, [], [])
            return RenderNodeAction.Proceed

        def OnElementEnd(self, eid):
            current, self.current = self.current, None
            if current is None or self.error is not None:
                return
            try:
                builder.add(current)
                self.names.append(current.name)
            except RequestError as exc:
                self.error = exc

        def OnInstanceBegin(self, node):
            self.transforms.append(node.GetTransform())
            return RenderNodeAction.Proceed

        def OnInstanceEnd(self, node):
            self.transforms.pop()

        def OnLinkBegin(self, node):
            return RenderNodeAction.Skip

        def OnLinkEnd(self, node):
            pass

        def OnFaceBegin(self, node):
            return RenderNodeAction.Proceed

        def OnFaceEnd(self, node):
            pass

        def OnMaterial(self, node):
            pass

        def OnLight(self, node):
            pass

        def OnRPC(self, node):
            pass

        def OnPolymesh(self, node):
            if self.current is None:
                return
            element = self.current
            base = len(element.points)
            for p in node.GetPoints():
                # Innermost instance first, out to the project.
                for t in reversed(self.transforms):
                    p = t.OfPoint(p)
                element.points.append((p.X, p.Y, p.Z))
            for f in node.GetFacets():
                element.triangles.append((base + f.V1, base + f.V2, base + f.V3))

    return Collector()


def export(doc, ids, limit):
    """doc's elements in its default 3D view, or the elements named in ids,
    as .glb bytes of at most limit bytes; answers (bytes, node names)."""
    from Autodesk.Revit.DB import CustomExporter
    if ids is not None:
        missing = [i for i in ids if not i.lstrip("-").isdigit() or doc.GetElement(element_id(i)) is None]
        if missing:
            raise RequestError(400, "elementIds names elements the project does not hold: %s" % ", ".join(missing[:10]))
    view = views.three_d_view(doc)
    if view is None:
        raise RequestError(409, "the project has no 3D view to export from; open the default 3D view once in Revit")
    builder = gltf.Builder(limit, metres_per_unit=FOOT_IN_METRES, z_up=True)
    context = _collector(doc, set(ids) if ids is not None else None, builder)
    exporter = CustomExporter(doc, context)
    try:
        exporter.Export(view)
    finally:
        exporter.Dispose()
    if context.error is not None:
        raise context.error
    names = list(context.names)
    for i in ids or ():
        if i not in names:
            # Named, but not drawn in the view (a level, a hidden element):
            # its node stays, without a mesh.
            element = doc.GetElement(element_id(i))
            builder.add(gltf.Element(i, element.Name, element.Category.Name if element.Category is not None else ""))
            names.append(i)
    return builder.glb(GENERATOR), names
