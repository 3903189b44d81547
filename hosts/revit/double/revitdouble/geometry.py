"""XYZ, Line and BoundingBoxXYZ. Coordinates are Revit internal units:
decimal feet (UnitUtils converts, see units.py)."""
import math

from .errors import ArgumentException, ArgumentsInconsistentException, require

# Application.ShortCurveTolerance, "the enforced minimum length for any curve
# created by Revit" (https://apidocs.co/apps/revit/2020.1/0717b79e-efa9-e5ad-baed-999782c0e1e4.htm):
# 1/32 inch, in feet.
SHORT_CURVE_TOLERANCE = 1.0 / 384.0
_EPS = 1e-9


class XYZ:
    """An immutable point or vector, as Autodesk.Revit.DB.XYZ."""

    __slots__ = ("_x", "_y", "_z")

    def __init__(self, *xyz):
        # XYZ() and XYZ(x, y, z), Revit's two constructors.
        if len(xyz) not in (0, 3):
            raise TypeError("No constructor of XYZ takes %d arguments: XYZ() or XYZ(x, y, z)" % len(xyz))
        x, y, z = xyz or (0.0, 0.0, 0.0)
        for v in (x, y, z):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise ArgumentException("XYZ coordinates must be finite numbers, got %r" % (v,))
        self._x, self._y, self._z = float(x), float(y), float(z)

    X = property(lambda self: self._x)
    Y = property(lambda self: self._y)
    Z = property(lambda self: self._z)

    def Add(self, o):
        return XYZ(self._x + o.X, self._y + o.Y, self._z + o.Z)

    def Subtract(self, o):
        return XYZ(self._x - o.X, self._y - o.Y, self._z - o.Z)

    def Multiply(self, k):
        return XYZ(self._x * k, self._y * k, self._z * k)

    def Divide(self, k):
        return XYZ(self._x / k, self._y / k, self._z / k)

    def Negate(self):
        return XYZ(-self._x, -self._y, -self._z)

    def DotProduct(self, o):
        return self._x * o.X + self._y * o.Y + self._z * o.Z

    def CrossProduct(self, o):
        return XYZ(self._y * o.Z - self._z * o.Y, self._z * o.X - self._x * o.Z, self._x * o.Y - self._y * o.X)

    def GetLength(self):
        return math.sqrt(self.DotProduct(self))

    def Normalize(self):
        n = self.GetLength()
        return XYZ(0, 0, 0) if n < _EPS else self.Divide(n)

    def DistanceTo(self, o):
        return self.Subtract(o).GetLength()

    def IsAlmostEqualTo(self, o, tolerance=1e-9):
        return self.DistanceTo(o) <= tolerance

    IsZeroLength = lambda self: self.GetLength() < _EPS

    __add__ = Add
    __sub__ = Subtract
    __mul__ = Multiply
    __rmul__ = Multiply
    __truediv__ = Divide
    __neg__ = Negate

    def __eq__(self, o):
        return isinstance(o, XYZ) and (self._x, self._y, self._z) == (o.X, o.Y, o.Z)

    def __hash__(self):
        return hash((self._x, self._y, self._z))

    def ToString(self):
        return "(%.9f, %.9f, %.9f)" % (self._x, self._y, self._z)

    __str__ = ToString

    def __repr__(self):
        return "XYZ" + self.ToString()


XYZ.Zero = XYZ(0, 0, 0)
XYZ.BasisX = XYZ(1, 0, 0)
XYZ.BasisY = XYZ(0, 1, 0)
XYZ.BasisZ = XYZ(0, 0, 1)


class Curve:
    """The base of Revit's curves; the double models bound lines only."""


class Line(Curve):
    __slots__ = ("_p0", "_p1")

    def __init__(self, p0, p1):
        self._p0, self._p1 = p0, p1

    @staticmethod
    def CreateBound(endpoint1, endpoint2):
        """Throws ArgumentNullException for a null end point and
        ArgumentsInconsistentException when the "curve length is too small
        for Revit's tolerance (as identified by
        Application.ShortCurveTolerance)"
        (https://www.revitapidocs.com/2025/7885bdf9-3007-ea60-af6b-a96ac7672c18.htm)."""
        require(endpoint1, "endpoint1")
        require(endpoint2, "endpoint2")
        if not isinstance(endpoint1, XYZ) or not isinstance(endpoint2, XYZ):
            raise ArgumentException("Line.CreateBound takes two XYZ points")
        if endpoint1.DistanceTo(endpoint2) < SHORT_CURVE_TOLERANCE:
            raise ArgumentsInconsistentException(
                "Curve length is too small for Revit's tolerance (as identified by Application.ShortCurveTolerance).")
        return Line(endpoint1, endpoint2)

    def GetEndPoint(self, index):
        if index not in (0, 1):
            raise ArgumentException("index must be 0 or 1")
        return self._p0 if index == 0 else self._p1

    @property
    def Length(self):
        return self._p0.DistanceTo(self._p1)

    ApproximateLength = Length

    @property
    def Direction(self):
        return self._p1.Subtract(self._p0).Normalize()

    @property
    def Origin(self):
        return self._p0

    IsBound = property(lambda self: True)

    def Evaluate(self, parameter, normalized):
        t = parameter if normalized else parameter / self.Length
        return self._p0.Add(self._p1.Subtract(self._p0).Multiply(t))

    def CreateTransformed(self, transform):
        return Line(transform.OfPoint(self._p0), transform.OfPoint(self._p1))

    def _moved(self, v):
        return Line(self._p0.Add(v), self._p1.Add(v))

    def __eq__(self, o):
        return isinstance(o, Line) and self._p0 == o._p0 and self._p1 == o._p1

    def __repr__(self):
        return "Line(%s, %s)" % (self._p0, self._p1)


class Transform:
    """Only the translation the double needs for moves. Revit's one
    constructor copies a transform (Transform(Transform), api/revit2017.json);
    new ones come from CreateTranslation or Identity."""

    def __init__(self, source):
        self.Origin = source.Origin

    @staticmethod
    def CreateTranslation(vector):
        t = Transform.__new__(Transform)
        t.Origin = vector
        return t

    def OfPoint(self, p):
        return p.Add(self.Origin)


Transform.Identity = Transform.CreateTranslation(XYZ.Zero)


class BoundingBoxXYZ:
    def __init__(self, mn=None, mx=None):
        self.Min = mn if mn is not None else XYZ(0, 0, 0)
        self.Max = mx if mx is not None else XYZ(0, 0, 0)
        self.Enabled = True
        self.Transform = Transform.Identity

    def __repr__(self):
        return "BoundingBoxXYZ(%s, %s)" % (self.Min, self.Max)


def union(boxes):
    boxes = [b for b in boxes if b is not None]
    if not boxes:
        return None
    return BoundingBoxXYZ(XYZ(min(b.Min.X for b in boxes), min(b.Min.Y for b in boxes), min(b.Min.Z for b in boxes)),
                          XYZ(max(b.Max.X for b in boxes), max(b.Max.Y for b in boxes), max(b.Max.Z for b in boxes)))
