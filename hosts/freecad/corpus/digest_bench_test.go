package corpus_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
)

// benchHost is a runtime of the benchmark's own.
type benchHost struct{ rt *launcher.Runtime }

func newBenchHost(b *testing.B) *benchHost {
	b.Helper()
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0",
		AllowedOrigin: "http://127.0.0.1:18080", StartTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Stop() })
	return &benchHost{rt: rt}
}

func (h *benchHost) exec(b *testing.B, mode hostv1.Mode, code string) *hostv1.HostResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := h.rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: mode, Code: code})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// thousandObjects fills the document with 1,000 objects of the kinds a
// building model holds: walls on their base lines, Draft rectangles and
// boxes.
const thousandObjects = `import Arch, Draft
for i in range(250):
    x, y = (i % 25) * 3000.0, (i // 25) * 3000.0
    line = Draft.makeLine(App.Vector(x, y, 0), App.Vector(x + 2000, y, 0))
    Arch.makeWall(line, width=200, height=2800)
    Draft.makeRectangle(1000, 500, placement=App.Placement(App.Vector(x, y + 1000, 0), App.Rotation()))
    box = doc.addObject("Part::Box", "Box")
    box.Placement.Base = App.Vector(x, y + 2000, 0)
`

// timeDigest reads the document the way the adapter does before every
// script (a journal: names and states, values only of what changes), sets
// one object's placement to its own value as a script might (the journal
// then reads that object's values) and clears the Touched that leaves, as a
// verified rollback does, and compares the document with the
// journal as after a rollback; then reads every value of every object, as
// a digest that reads the whole document would. It prints the object count
// and the milliseconds of each.
const timeDigest = `import time
from nexus_freecad import digest, journal
t0 = time.perf_counter()
j = journal.Journal(App, doc)
t1 = time.perf_counter()
obj = doc.Objects[len(doc.Objects) // 2]
obj.Placement = obj.Placement
obj.purgeTouched()
differences = j.compare(doc)
t2 = time.perf_counter()
j.close()
assert not differences, differences
assert len(j.values) == 1, sorted(j.values)
t3 = time.perf_counter()
digest.capture(doc)
t4 = time.perf_counter()
print(len(j.names), (t1 - t0) * 1000, (t2 - t1) * 1000, (t4 - t3) * 1000)
`

// BenchmarkDigest measures the adapter's digest: on a 1,000-object document
// (capture-ms: the journal started, as before a script; verify-ms: one
// object changed and the document compared, as after a rollback;
// full-read-ms: every value of every object read, the digest the journal
// replaced), and on the demo room the demo commits (demo-...), beside that
// run's own duration (demo-run-ms).
func BenchmarkDigest(b *testing.B) {
	h := newBenchHost(b)
	b.Run("1000 objects", func(b *testing.B) {
		h.fill(b, thousandObjects)
		h.measureDigest(b, "")
	})
	b.Run("demo room", func(b *testing.B) {
		res := h.fill(b, launchertest.DemoRoomScript(b))
		h.measureDigest(b, "demo-")
		b.ReportMetric(float64(res.GetDurationMs()), "demo-run-ms")
	})
}

func (h *benchHost) fill(b *testing.B, code string) *hostv1.HostResult {
	b.Helper()
	if res := h.exec(b, hostv1.Mode_MODE_TRANSACTION, emptyDocument); res.GetError() != nil {
		b.Fatalf("empty the document: %v", res.GetError())
	}
	res := h.exec(b, hostv1.Mode_MODE_TRANSACTION, code)
	if res.GetError() != nil {
		b.Fatalf("fill the document: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
	}
	return res
}

func (h *benchHost) measureDigest(b *testing.B, prefix string) {
	b.Helper()
	var capture, verify, full float64
	objects := 0
	b.ResetTimer()
	for range b.N {
		res := h.exec(b, hostv1.Mode_MODE_TRANSACTION, timeDigest)
		if res.GetError() != nil {
			b.Fatalf("digest: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
		}
		f := strings.Fields(res.GetStdout())
		if len(f) != 4 {
			b.Fatalf("digest printed %q", res.GetStdout())
		}
		objects, _ = strconv.Atoi(f[0])
		c, _ := strconv.ParseFloat(f[1], 64)
		v, _ := strconv.ParseFloat(f[2], 64)
		r, _ := strconv.ParseFloat(f[3], 64)
		capture += c
		verify += v
		full += r
	}
	b.ReportMetric(float64(objects), prefix+"objects")
	b.ReportMetric(capture/float64(b.N), prefix+"capture-ms")
	b.ReportMetric(verify/float64(b.N), prefix+"verify-ms")
	b.ReportMetric(full/float64(b.N), prefix+"full-read-ms")
}
