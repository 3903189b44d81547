package runner

import (
	"slices"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// waitLimit bounds each wait of a test on a follower; a follower that
// works takes microseconds.
const waitLimit = 30 * time.Second

// TestFollowerTakesWhatIsWaiting: a follower of a run's tail gets a lone
// chunk alone, as soon as it is written, before the next one exists; and
// the chunks written while it was busy sending come to it as one batch, in
// order, each with its own seq.
func TestFollowerTakesWhatIsWaiting(t *testing.T) {
	l := NewLocalLogs().open("run-1")
	chunk := func(seq int64) *agentv1.StreamChunk { return &agentv1.StreamChunk{Seq: seq, RunId: "run-1"} }
	batches := make(chan []int64)
	release := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		last := int64(0)
		_, err := l.serve(t.Context(), &last, func(cs []*agentv1.StreamChunk) error {
			var seqs []int64
			for _, c := range cs {
				seqs = append(seqs, c.GetSeq())
			}
			batches <- seqs
			<-release
			return nil
		})
		served <- err
	}()
	next := func() []int64 {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case <-time.After(waitLimit):
			t.Fatal("the follower was handed nothing")
			return nil
		}
	}

	l.add(chunk(1))
	if b := next(); !slices.Equal(b, []int64{1}) {
		t.Fatalf("first batch %v, want the lone chunk 1 alone before chunk 2 exists", b)
	}
	// The follower is still sending chunk 1: what comes meanwhile waits.
	for seq := int64(2); seq <= 5; seq++ {
		l.add(chunk(seq))
	}
	release <- struct{}{}
	if b := next(); !slices.Equal(b, []int64{2, 3, 4, 5}) {
		t.Fatalf("second batch %v, want chunks 2 to 5 together, in order", b)
	}
	release <- struct{}{}
	l.add(chunk(6))
	if b := next(); !slices.Equal(b, []int64{6}) {
		t.Fatalf("third batch %v, want the lone chunk 6", b)
	}
	l.finish()
	release <- struct{}{}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
