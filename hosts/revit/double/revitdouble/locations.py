"""Where an element is: LocationCurve (a wall's line) and LocationPoint (a
family instance's point), each change through the element, so it needs an
open transaction; and the box around a segment the bounding boxes use."""
from .errors import ArgumentException
from .geometry import XYZ, BoundingBoxXYZ, Line


class LocationCurve:
    def __init__(self, element):
        self._el = element

    @property
    def Curve(self):
        return self._el._live()._data["curve"]

    @Curve.setter
    def Curve(self, curve):
        if not isinstance(curve, Line):
            raise ArgumentException("The double models walls on lines only.")
        self._el._set("curve", curve)

    def Move(self, translation):
        self._el._set("curve", self.Curve._moved(translation))
        return True


class LocationPoint:
    def __init__(self, element):
        self._el = element

    @property
    def Point(self):
        return self._el._live()._data["point"]

    @Point.setter
    def Point(self, p):
        self._el._set("point", p)

    Rotation = property(lambda self: 0.0)

    def Move(self, translation):
        self._el._set("point", self.Point.Add(translation))
        return True


def box_around_segment(p0, p1, half_width, z0, z1):
    return BoundingBoxXYZ(XYZ(min(p0.X, p1.X) - half_width, min(p0.Y, p1.Y) - half_width, z0),
                          XYZ(max(p0.X, p1.X) + half_width, max(p0.Y, p1.Y) + half_width, z1))
