package modelrouter

import "math"

// visionLimit is the largest image a model sees without its vendor scaling
// it again: the longest side, the shortest side, the area and the patch
// budget, each where the vendor documents one (0 leaves it unbounded). The
// host runtime applies the same rule to the views it renders
// (hosts/hostkit/imagefit.py fit_image), so a capture arrives at the
// size the vendor keeps and is never scaled twice.
type visionLimit struct {
	maxPx      int32
	maxShortPx int32
	maxPixels  int64
	patchPx    int32
	maxPatches int32
}

// limitOf is the rule of catalog model m.
func limitOf(m *ModelEntry) visionLimit {
	return visionLimit{maxPx: m.VisionMaxPx, maxShortPx: m.VisionMaxShortPx, maxPixels: m.VisionMaxPixels,
		patchPx: m.VisionPatchPx, maxPatches: m.VisionMaxPatches}
}

// roundPx rounds a scaled side half up, never below one pixel.
func roundPx(x float64) int { return max(1, int(math.Floor(x+0.5))) }

// fit answers the size w x h scales to under the limit, and whether it must.
// The sides, the short side and the area scale the image once, keeping its
// aspect; a patch budget then scales it as OpenAI's guide does: to the
// budget's area, then down to a whole number of patches across.
func (l visionLimit) fit(w, h int) (int, int, bool) {
	if l.maxPx <= 0 || w <= 0 || h <= 0 {
		return w, h, false
	}
	f := math.Min(1, float64(l.maxPx)/float64(max(w, h)))
	if l.maxShortPx > 0 {
		f = math.Min(f, float64(l.maxShortPx)/float64(min(w, h)))
	}
	if l.maxPixels > 0 {
		f = math.Min(f, math.Sqrt(float64(l.maxPixels)/(float64(w)*float64(h))))
	}
	nw, nh := w, h
	if f < 1 {
		nw, nh = roundPx(float64(w)*f), roundPx(float64(h)*f)
		// Rounding up may cross a bound by a pixel: take it off the side
		// that bound is about.
		for nw > 1 && nh > 1 {
			if l.maxShortPx > 0 && min(nw, nh) > int(l.maxShortPx) {
				nw, nh = shrinkSide(nw, nh, false)
				continue
			}
			if max(nw, nh) > int(l.maxPx) || (l.maxPixels > 0 && int64(nw)*int64(nh) > l.maxPixels) {
				nw, nh = shrinkSide(nw, nh, true)
				continue
			}
			break
		}
	}
	if l.patchPx > 0 && l.maxPatches > 0 && l.patches(nw, nh) > int(l.maxPatches) {
		p := float64(l.patchPx)
		s := math.Sqrt(float64(l.maxPatches) * p * p / (float64(nw) * float64(nh)))
		across := float64(nw) * s / p
		s *= math.Floor(across) / across
		nw, nh = roundPx(float64(nw)*s), roundPx(float64(nh)*s)
		for l.patches(nw, nh) > int(l.maxPatches) && nw > 1 && nh > 1 {
			nw, nh = shrinkSide(nw, nh, true)
		}
	}
	return nw, nh, nw != w || nh != h
}

// shrinkSide takes a pixel off the long side, or off the short one.
func shrinkSide(w, h int, long bool) (int, int) {
	if (w >= h) == long {
		return w - 1, h
	}
	return w, h - 1
}

// patches counts the patchPx squares that cover w x h, partial ones whole.
func (l visionLimit) patches(w, h int) int {
	p := int(l.patchPx)
	return ((w + p - 1) / p) * ((h + p - 1) / p)
}
