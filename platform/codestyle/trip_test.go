package codestyle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trip starts where a tool result is taken up: the collect step of the
// pending call, which answers the tool loop with a result (for the next
// model turn) or a suspension.
const (
	tripScope   = "nexus.local/services/orchestrator"
	tripPackage = tripScope + "/call"
	tripFunc    = "Call.Collect"
	tripFollow  = "p"
	// maxStays is how often the trip may enter one file: the functions of a
	// stage live in one file, which the trip enters once, or twice when two
	// stages use it (the outcome record of a take and of a decision, the 3D
	// models of a preview and of a result).
	maxStays = 2
)

// TestToolResultTrip follows the pending call from its collect step through
// every call that passes it (or a part of it) on, every branch in the order
// the code is written, and holds each file to maxStays stays: a call's stages
// live together, so reading one result's way does not go back and forth
// between files. NEXUS_TRIP=package:Func:param measures
// another entry the same way (go test -v -run TestToolResultTrip
// ./platform/codestyle prints the figures).
func TestToolResultTrip(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	e := TripEntry{Package: tripPackage, Func: tripFunc, Follow: tripFollow}
	if v := os.Getenv("NEXUS_TRIP"); v != "" {
		parts := strings.Split(v, ":")
		if len(parts) != 3 {
			t.Fatalf("NEXUS_TRIP=%q: want package:Func:param, e.g. %s:%s:%s", v, tripPackage, tripFunc, tripFollow)
		}
		e = TripEntry{Package: parts[0], Func: parts[1], Follow: parts[2]}
	}
	trip, err := FollowValue(root, tripScope, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("following %s of %s.%s:\n%s", e.Follow, e.Package, e.Func, trip)
	for f, n := range trip.Files() {
		if n > maxStays {
			t.Errorf("the trip enters %s %d times; at most %d", f, n, maxStays)
		}
	}
}

// TestFollowValueCountsStays walks a planted module whose value bounces
// between two files, through a field and a name bound to it, and not
// through a value computed from it or a call through an interface.
func TestFollowValueCountsStays(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/trip\n\ngo 1.22\n",
		"p/a.go": `package p

type T struct{ N int }

type Sink interface{ Take(*T) }

func Start(v *T, s Sink) {
	inB(v)
	inA(v)
	inB(copyOf(v))
	s.Take(v)
	w := v
	inB(w)
}

func inA(v *T) {}

func leaf(n int) {}

func copyOf(v *T) *T { c := *v; return &c }
`,
		"p/b.go": `package p

func inB(v *T) { leaf(v.N) }
`,
	}
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trip, err := FollowValue(root, "example.com/trip", TripEntry{Package: "example.com/trip/p", Func: "Start", Follow: "v"})
	if err != nil {
		t.Fatal(err)
	}
	// Start, inB, leaf, inA, copyOf (v is its argument), inB, leaf: the
	// copy's inB and the interface's Take are not entered.
	want := []string{"p/a.go", "p/b.go", "p/a.go", "p/b.go", "p/a.go"}
	if strings.Join(trip.Stays, " ") != strings.Join(want, " ") {
		t.Fatalf("stays %v, want %v\n%s", trip.Stays, want, trip)
	}
	if f := trip.Files(); f["p/a.go"] != 3 || f["p/b.go"] != 2 || trip.Returns() != 3 {
		t.Errorf("files %v and %d returns, want a.go 3, b.go 2 and 3 returns", f, trip.Returns())
	}
}
