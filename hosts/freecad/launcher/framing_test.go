package launcher_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"strings"
	"testing"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// doorShare answers the share of the image that the door's projected box
// covers: the bounding box of door-coloured pixels over the image area.
func doorShare(t *testing.T, img *hostv1.Image) float64 {
	t.Helper()
	m, err := png.Decode(bytes.NewReader(img.GetData()))
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bounds()
	box := image.Rectangle{}
	found := false
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := m.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			// The runtime paints doors brown (150, 95, 50), shaded.
			if r > 40 && float64(r) > 1.35*float64(g) && float64(g) > 1.5*float64(bl) {
				p := image.Rect(x, y, x+1, y+1)
				if !found {
					box, found = p, true
				} else {
					box = box.Union(p)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no door pixels in the %s image framing %q", img.GetView(), img.GetFramed())
	}
	return float64(box.Dx()*box.Dy()) / float64(b.Dx()*b.Dy())
}

const doorScript = `import Arch
wall = doc.getObjectsByLabel("Wall019")[0]
door = Arch.makeWindowPreset("Simple door", width=700, height=2000, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100,
    placement=App.Placement(App.Vector(4150, 3100, 0), App.Rotation(App.Vector(1, 0, 0), 90)))
door.Label = "Door"
door.Hosts = [wall]
`

func framingRules(t *testing.T) *hostv1.Framing {
	t.Helper()
	hosts, err := newCapability(t).ListHosts(context.Background(), &capabilityv1.ListHostsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts.GetHosts() {
		if h.GetHostApp() == "freecad" && h.GetViewDefaults().GetFraming() != nil {
			return h.GetViewDefaults().GetFraming()
		}
	}
	t.Fatal("the capability service has no framing rules for freecad")
	return nil
}

func TestAffectedView(t *testing.T) {
	framing := framingRules(t)
	freshDocument(t)
	for _, code := range []string{fortyWallsScript, doorScript} {
		if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: code}); res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("build the model: %v", res)
		}
	}
	whole, err := shared.Client.ExportView(context.Background(), &hostv1.ExportViewRequest{View: "isometric", MaxPx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	wholeShare := doorShare(t, whole.GetImages()[0])

	capture := &hostv1.Capture{View: "isometric", MaxPx: 1024, Framing: framing}
	t.Run("moving one door frames the door", func(t *testing.T) {
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Capture: capture,
			Code: "door = doc.getObjectsByLabel('Door')[0]\np = door.Placement\np.Base.x += 150\ndoor.Placement = p\n"})
		if res.GetError() != nil || len(res.GetImages()) != 1 {
			t.Fatalf("want one image, got %v", res.GetError())
		}
		img := res.GetImages()[0]
		if !strings.HasPrefix(img.GetFramed(), "changed: ") || !strings.Contains(img.GetFramed(), "Window") {
			t.Errorf("the image does not say it frames the door: %q", img.GetFramed())
		}
		framedShare := doorShare(t, img)
		t.Logf("door box covers %.2f%% of the %dx%d %s frame, %.2f%% of the whole-model view (%.1fx)",
			100*framedShare, img.GetWidth(), img.GetHeight(), img.GetView(), 100*wholeShare, framedShare/wholeShare)
		if framedShare < 4*wholeShare {
			t.Fatalf("the framed view shows the door at %.3f of the frame, the whole view at %.3f: not clearly larger", framedShare, wholeShare)
		}
	})
	t.Run("renaming a label takes no image and says why", func(t *testing.T) {
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Capture: capture,
			Code: "doc.getObjectsByLabel('Wall007')[0].Label = 'North wall'\n"})
		if res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("want a commit, got %v", res)
		}
		if len(res.GetImages()) != 0 || !strings.Contains(res.GetCaptureNote(), "changed no geometry") || !strings.Contains(res.GetCaptureNote(), "Label") {
			t.Fatalf("want no image and a note naming the label change, got %d images, note %q", len(res.GetImages()), res.GetCaptureNote())
		}
	})
	t.Run("a flat change is shown in plan", func(t *testing.T) {
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Capture: capture,
			Code: "import Part\nslab = doc.addObject('Part::Box', 'Slab')\nslab.Length, slab.Width, slab.Height = 3000, 2000, 150\n"})
		if res.GetError() != nil || len(res.GetImages()) != 1 || res.GetImages()[0].GetView() != "plan" {
			t.Fatalf("want one plan image, got %v", res)
		}
	})
}
