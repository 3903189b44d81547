package capability

import (
	"context"
	"math"
	"testing"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestFramingUnitsPerHost checks each host's framing rule in the unit its
// API reports coordinates in: FreeCAD's millimetres, Revit's decimal feet.
// The smallest framed extent is the same length on every host (2.5 m), so a
// rule copied from one host to another in the wrong unit fails here.
func TestFramingUnitsPerHost(t *testing.T) {
	c := startGRPC(t, sqlstoretest.Open(t, "sqlite"))
	hosts, err := c.ListHosts(context.Background(), &capabilityv1.ListHostsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]hostv1.LengthUnit{"freecad": hostv1.LengthUnit_LENGTH_UNIT_MILLIMETRE, "revit": hostv1.LengthUnit_LENGTH_UNIT_FOOT}
	metres := map[hostv1.LengthUnit]float64{hostv1.LengthUnit_LENGTH_UNIT_MILLIMETRE: 0.001, hostv1.LengthUnit_LENGTH_UNIT_FOOT: 0.3048}
	if len(hosts.GetHosts()) != len(want) {
		t.Fatalf("hosts %v, want a unit for each of %v", hosts.GetHosts(), want)
	}
	for _, h := range hosts.GetHosts() {
		f := h.GetViewDefaults().GetFraming()
		if f.GetUnit() != want[h.GetHostApp()] {
			t.Errorf("%s framing unit %s, want %s", h.GetHostApp(), f.GetUnit(), want[h.GetHostApp()])
			continue
		}
		got := f.GetMinExtent() * metres[f.GetUnit()]
		t.Logf("%s: minExtent %g %s = %.4f m", h.GetHostApp(), f.GetMinExtent(), f.GetUnit(), got)
		if math.Abs(got-2.5) > 0.001 {
			t.Errorf("%s: minExtent %g %s is %.4f m, want 2.5 m", h.GetHostApp(), f.GetMinExtent(), f.GetUnit(), got)
		}
	}
}
