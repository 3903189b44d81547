"""CustomExporter: a 3D view's model sent through an export context, as
Revit's own exporters are built on it
(https://www.revitapidocs.com/2025/d2437433-9183-cbb1-1c67-dedd86db5b5a.htm).

The order of calls follows the IExportContext reference
(https://www.revitapidocs.com/2025/7d0dc6df-db0e-6a07-3b42-8dde1bedb3c1.htm):
Start, then OnViewBegin, then for each element IsCanceled (queried "at the
beginning of every element"), OnElementBegin, its geometry, OnElementEnd;
then OnViewEnd and Finish, also after a cancel. A family instance's
geometry comes inside OnInstanceBegin / OnInstanceEnd, in the family's own
coordinates, with the instance's transform on the InstanceNode; an element
of the project comes in project coordinates. Each face is a
PolymeshTopology of triangles (OnPolymesh), announced by OnFaceBegin only
when IncludeGeometricObjects is set.

The double's elements are boxes (render.py draws them so too), so each
element is six faces of two triangles each.
"""

from .errors import ArgumentException, ArgumentNullException
from .geometry import Transform, XYZ
from .ids import ElementId, NetList
from .netenum import NetEnum


class RenderNodeAction(NetEnum):
    """What a context answers at the beginning of a node; Skip still gets
    the node's end notification
    (https://www.revitapidocs.com/2026/39f98799-628b-8d65-765c-ca86949ce7ed.htm)."""
    Proceed = 0
    Skip = 1


class IExportContext:
    """The interface an export context implements; the double calls these
    methods, a context overrides them."""

    def Start(self):
        return True

    def Finish(self):
        pass

    def IsCanceled(self):
        return False

    def OnViewBegin(self, node):
        return RenderNodeAction.Proceed

    def OnViewEnd(self, element_id):
        pass

    def OnElementBegin(self, element_id):
        return RenderNodeAction.Proceed

    def OnElementEnd(self, element_id):
        pass

    def OnInstanceBegin(self, node):
        return RenderNodeAction.Proceed

    def OnInstanceEnd(self, node):
        pass

    def OnLinkBegin(self, node):
        return RenderNodeAction.Proceed

    def OnLinkEnd(self, node):
        pass

    def OnFaceBegin(self, node):
        return RenderNodeAction.Proceed

    def OnFaceEnd(self, node):
        pass

    def OnMaterial(self, node):
        pass

    def OnPolymesh(self, node):
        pass

    def OnLight(self, node):
        pass

    def OnRPC(self, node):
        pass


class IModelExportContext(IExportContext):
    """The leaf interface new model exporters implement (the CustomExporter
    class page above: the model is output as if exported to a CAD format)."""


class PolymeshFacet:
    """One triangle: three indices into its polymesh's points."""

    def __init__(self, v1, v2, v3):
        self._v = (v1, v2, v3)

    V1 = property(lambda self: self._v[0])
    V2 = property(lambda self: self._v[1])
    V3 = property(lambda self: self._v[2])

    def GetVertices(self):
        return NetList(self._v)


class PolymeshTopology:
    """A face's tessellation: points and facets (triangles)
    (https://apidocs.co/apps/revit/2025/fef5982c-3825-eed0-f792-1e0bff5509c2.htm)."""

    def __init__(self, points, facets):
        self._points, self._facets = points, facets

    NumberOfPoints = property(lambda self: len(self._points))
    NumberOfFacets = property(lambda self: len(self._facets))

    def GetPoints(self):
        return NetList(self._points)

    def GetFacets(self):
        return NetList(self._facets)

    def GetPoint(self, index):
        return self._points[index]

    def GetFacet(self, index):
        return self._facets[index]


class RenderNode:
    """The base of the nodes an export context receives."""

    def __init__(self, name=""):
        self._name = name

    NodeName = property(lambda self: self._name)


class ViewNode(RenderNode):
    def __init__(self, view):
        super().__init__(view.Name)
        self._view = view

    ViewId = property(lambda self: ElementId(self._view._id))


class InstanceNode(RenderNode):
    """A family instance: its geometry follows in the family's coordinates,
    placed by GetTransform() (OnInstanceBegin's example keeps a stack of
    them: https://www.revitapidocs.com/2026/2db35bdb-8d14-a015-9bfb-9283f503edab.htm)."""

    def __init__(self, name, transform):
        super().__init__(name)
        self._transform = transform

    def GetTransform(self):
        return self._transform


class FaceNode(RenderNode):
    pass


# The six faces of a box, as corner indices (bit 0: x, bit 1: y, bit 2: z),
# each cut into two triangles.
_BOX_FACES = ((0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5))


class CustomExporter:
    """Exports a 3D view through an IExportContext."""

    def __init__(self, document, context):
        if document is None:
            raise ArgumentNullException("document")
        if context is None:
            raise ArgumentNullException("context")
        self._doc, self._context = document, context
        self.IncludeGeometricObjects = False
        self.ShouldStopOnError = True

    @staticmethod
    def IsRenderingSupported():
        return True

    IsValidObject = property(lambda self: True)

    def Dispose(self):
        pass

    def Export(self, view):
        """Exports one view, or each view of a list of view ids; a template
        view is refused (Export(View3D)'s exceptions:
        https://www.revitapidocs.com/2015/79cf749f-79bd-482e-5ae3-9a5245ef4e03.htm)."""
        from .views import View3D
        if view is None:
            raise ArgumentNullException("view")
        views = [self._doc.GetElement(i) for i in view] if isinstance(view, (list, tuple, NetList)) else [view]
        for v in views:
            if not isinstance(v, View3D):
                # A model context exports 3D views; a 2D view wants an
                # IExportContext2D, which the double does not model.
                raise ArgumentException("The view is not exportable with this context: %s is not a 3D view." % v.Name)
            if v.IsTemplate:
                raise ArgumentException("The view is not exportable, such as a template view, for example.")
        ctx = self._context
        if not ctx.Start():
            return
        try:
            for v in views:
                self._view(v)
        finally:
            ctx.Finish()

    def _view(self, view):
        from .render import _clip, _elements
        from .walls import FamilyInstance
        ctx = self._context
        if ctx.OnViewBegin(ViewNode(view)) == RenderNodeAction.Proceed:
            items, _ = _clip(_elements(self._doc, view), view)
            for element, box in items:
                if ctx.IsCanceled():
                    break
                eid = ElementId(element._id)
                if ctx.OnElementBegin(eid) == RenderNodeAction.Proceed:
                    if isinstance(element, FamilyInstance):
                        self._instance(element, box)
                    else:
                        self._box(box, XYZ.Zero)
                ctx.OnElementEnd(eid)
        ctx.OnViewEnd(ElementId(view._id))

    def _instance(self, element, box):
        origin = element.Location.Point
        node = InstanceNode(element.Name, Transform.CreateTranslation(origin))
        if self._context.OnInstanceBegin(node) == RenderNodeAction.Proceed:
            self._box(box, origin)
        self._context.OnInstanceEnd(node)

    def _box(self, box, origin):
        corners = [XYZ((box.Max.X if i & 1 else box.Min.X) - origin.X, (box.Max.Y if i & 2 else box.Min.Y) - origin.Y,
                       (box.Max.Z if i & 4 else box.Min.Z) - origin.Z) for i in range(8)]
        ctx = self._context
        for quad in _BOX_FACES:
            face = FaceNode()
            if self.IncludeGeometricObjects and ctx.OnFaceBegin(face) != RenderNodeAction.Proceed:
                continue
            points = [corners[i] for i in quad]
            ctx.OnPolymesh(PolymeshTopology(points, [PolymeshFacet(0, 1, 2), PolymeshFacet(0, 2, 3)]))
            if self.IncludeGeometricObjects:
                ctx.OnFaceEnd(face)

