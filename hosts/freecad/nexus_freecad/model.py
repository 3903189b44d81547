"""The document as binary glTF for the person's 3D review: each drawn
object (elements.renderable) tessellated from its shape, one node per object
named by its internal name.

Debian's FreeCAD 0.20 writes no glTF headless (Import.export to .glb leaves
no file), so the kit's writer (hostkit.gltf) does it from Part's own
tessellation, in global coordinates: FreeCAD works in millimetres, +Z up.
"""

from hostkit import gltf
from hostkit.wire import RequestError
from nexus_freecad.elements import category_of, renderable

GENERATOR = "Nexus FreeCAD runtime"
# Chord tolerance of the tessellation: a 200th of an object's diagonal, not
# finer than a millimetre (a round column reads round, a wall stays two
# triangles a face).
_TOLERANCE_FRACTION = 0.005
_MIN_TOLERANCE_MM = 1.0


def _triangles(shape):
    diagonal = shape.BoundBox.DiagonalLength
    points, triangles = shape.tessellate(max(_MIN_TOLERANCE_MM, diagonal * _TOLERANCE_FRACTION))
    return [(p.x, p.y, p.z) for p in points], [tuple(t) for t in triangles]


def export(doc, ids, limit):
    """doc's drawn objects, or the objects named in ids, as .glb bytes of at
    most limit bytes; answers (bytes, node names in order)."""
    if ids is None:
        objects = [o for o in doc.Objects if renderable(o)]
    else:
        missing = [i for i in ids if doc.getObject(i) is None]
        if missing:
            raise RequestError(400, "elementIds names objects the document %s does not hold: %s"
                               % (doc.Name, ", ".join(missing[:10])))
        objects = [doc.getObject(i) for i in ids]
    builder = gltf.Builder(limit, metres_per_unit=0.001, z_up=True)
    for obj in objects:
        points, triangles = (), ()
        shape = getattr(obj, "Shape", None)
        if shape is not None and hasattr(shape, "tessellate") and not shape.isNull() and shape.Faces:
            points, triangles = _triangles(shape)
        builder.add(gltf.Element(obj.Name, obj.Label, category_of(obj), points, triangles))
    return builder.glb(GENERATOR), [o.Name for o in objects]
