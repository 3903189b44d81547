"""The image rule: the largest image the model sees without its vendor
scaling it again. services/modelrouter/imagefit.go applies the same rule to
the images the model router sends, so a view rendered here is never scaled
twice."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import math

from hostkit.wire import RequestError, int_field

DEFAULT_MAX_PX = 1024
MAX_PX_LIMIT = 4096
MIN_PX = 64


class ImageRule(object):
    """Longest side, shortest side, area and patch budget of an image (0
    leaves one unbounded)."""

    def __init__(self, max_px: int, max_short_px: int = 0, max_pixels: int = 0, patch_px: int = 0,
                 max_patches: int = 0) -> None:
        self.max_px, self.max_short_px, self.max_pixels = max_px, max_short_px, max_pixels
        self.patch_px, self.max_patches = patch_px, max_patches

    def patches(self, width: int, height: int) -> int:
        p = self.patch_px
        return ((width + p - 1) // p) * ((height + p - 1) // p)


def _round_px(x):
    return max(1, int(math.floor(x + 0.5)))


def fit_image(width: int, height: int, rule: ImageRule) -> Tuple[int, int]:
    """Scales width x height to fit rule, keeping the aspect: the sides, the
    short side and the area scale it once; a patch budget then scales it to
    the budget's area and down to a whole number of patches across."""
    f = min(1.0, float(rule.max_px) / max(width, height))
    if rule.max_short_px:
        f = min(f, float(rule.max_short_px) / min(width, height))
    if rule.max_pixels:
        f = min(f, math.sqrt(float(rule.max_pixels) / (width * height)))
    if f < 1:
        width, height = _round_px(width * f), _round_px(height * f)
        while width > 1 and height > 1:
            if rule.max_short_px and min(width, height) > rule.max_short_px:
                width, height = (width, height - 1) if width >= height else (width - 1, height)
            elif max(width, height) > rule.max_px or (rule.max_pixels and width * height > rule.max_pixels):
                width, height = (width - 1, height) if width >= height else (width, height - 1)
            else:
                break
    if rule.patch_px and rule.max_patches and rule.patches(width, height) > rule.max_patches:
        p = float(rule.patch_px)
        s = math.sqrt(rule.max_patches * p * p / (width * height))
        across = width * s / p
        s *= math.floor(across) / across
        width, height = _round_px(width * s), _round_px(height * s)
        while rule.patches(width, height) > rule.max_patches and width > 1 and height > 1:
            width, height = (width - 1, height) if width >= height else (width, height - 1)
    return width, height



def rule_from_request(request: Dict[str, Any]) -> ImageRule:
    """Answers the ImageRule a capture or export-view request names (maxPx,
    maxShortPx, maxPixels, patchPx and maxPatches), or raises RequestError
    for a value out of its bounds."""
    rule = ImageRule(
        int_field(request, "maxPx", DEFAULT_MAX_PX, MIN_PX, MAX_PX_LIMIT),
        int_field(request, "maxShortPx", 0, MIN_PX, MAX_PX_LIMIT),
        int_field(request, "maxPixels", 0, MIN_PX * MIN_PX, MAX_PX_LIMIT * MAX_PX_LIMIT),
        int_field(request, "patchPx", 0, 1, MAX_PX_LIMIT),
        int_field(request, "maxPatches", 0, 1, MAX_PX_LIMIT * MAX_PX_LIMIT))
    if bool(rule.patch_px) != bool(rule.max_patches):
        raise RequestError(400, "patchPx and maxPatches go together: got patchPx %d, maxPatches %d" % (rule.patch_px, rule.max_patches))
    return rule
