package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
)

// TestFollowLogAcrossMemoryAndStore follows one run while its log is
// written first by another replica (store only), then by a worker here
// (memory and store), then elsewhere again, then here to its end, with the
// tail trimmed on the way. A follower that keeps up and one that falls
// behind the whole tail both get every chunk once, in order, as the store
// holds it.
func TestFollowLogAcrossMemoryAndStore(t *testing.T) {
	ctx := t.Context()
	s := testDeps(memory.New(nil))
	const run, total = "run-local", 3 * maxLocalTail
	written := make([]*agentv1.StreamChunk, 0, total)
	appendChunk := func(l *localLog, seq int) {
		t.Helper()
		c := &agentv1.StreamChunk{Seq: int64(seq), RunId: run, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: fmt.Sprintf("delta %d", seq)}}}
		if err := s.Store.Append(ctx, run, c); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
		written = append(written, proto.Clone(c).(*agentv1.StreamChunk))
		if l != nil {
			l.add(c)
		}
	}
	for seq := 1; seq <= 3; seq++ {
		appendChunk(nil, seq)
	}

	follow := func(gate <-chan struct{}, got *[]*agentv1.StreamChunk) error {
		return s.Local.Follow(ctx, s.Store, run, 0, func(c *agentv1.StreamChunk) error {
			if gate != nil {
				<-gate
			}
			*got = append(*got, proto.Clone(c).(*agentv1.StreamChunk))
			return nil
		})
	}
	var keen, slow []*agentv1.StreamChunk
	var keenErr, slowErr error
	slowGate := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { keenErr = follow(nil, &keen) })
	wg.Go(func() { slowErr = follow(slowGate, &slow) })

	here := s.Local.open(run)
	for seq := 4; seq <= maxLocalTail+100; seq++ {
		appendChunk(here, seq)
	}
	// The worker here lets the run go; another replica writes on.
	s.Local.close(run, here)
	for seq := maxLocalTail + 101; seq <= maxLocalTail+200; seq++ {
		appendChunk(nil, seq)
	}
	again := s.Local.open(run)
	for seq := maxLocalTail + 201; seq <= total; seq++ {
		appendChunk(again, seq)
	}
	if err := s.Store.Finish(ctx, run); err != nil {
		t.Fatal(err)
	}
	again.finish()
	s.Local.close(run, again)
	close(slowGate)
	wg.Wait()

	for name, got := range map[string][]*agentv1.StreamChunk{"keen": keen, "slow": slow} {
		if len(got) != len(written) {
			t.Errorf("%s follower got %d chunks, want %d", name, len(got), len(written))
			continue
		}
		for i := range got {
			if !proto.Equal(got[i], written[i]) {
				t.Errorf("%s follower's chunk %d is %v, want %v", name, i, got[i], written[i])
				break
			}
		}
	}
	if keenErr != nil || slowErr != nil {
		t.Errorf("followers ended with %v and %v, want both at the log's end", keenErr, slowErr)
	}
}

// TestEmitCopiesWhatTheRunnerMayChange: a chunk emitted with emit reaches
// the replica's followers as it was when emitted, whatever the runner does
// with it afterwards; one emitted with emitFresh reaches them uncopied.
func TestEmitCopiesWhatTheRunnerMayChange(t *testing.T) {
	ctx := t.Context()
	s := testDeps(memory.New(nil))
	r := newRunner(s, nil, state.Lease{RunID: "run-emit", SessionID: "s"})
	defer r.letGo()
	kept := &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "as emitted"}}}
	if err := r.Emit(ctx, kept); err != nil {
		t.Fatal(err)
	}
	kept.GetMessage().Text, kept.Seq = "changed afterwards", 99
	fresh := &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: "t"}}}
	if err := r.EmitFresh(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	var got []*agentv1.StreamChunk
	r.local.finish()
	last := int64(0)
	if _, err := r.local.serve(ctx, &last, func(cs []*agentv1.StreamChunk) error { got = append(got, cs...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("followers got %d chunks, want 2", len(got))
	}
	if got[0].GetSeq() != 1 || got[0].GetMessage().GetText() != "as emitted" {
		t.Errorf("the emitted chunk reached followers as %v, want seq 1 and its text as emitted", got[0])
	}
	if got[1] != fresh || got[1].GetSeq() != 2 {
		t.Errorf("the fresh chunk reached followers as %p (%v), want %p itself at seq 2", got[1], got[1], fresh)
	}
}

// TestLocalTailStaysBounded: a long turn keeps at most maxLocalTail chunks
// in memory, and a follower behind the tail is sent to the store.
func TestLocalTailStaysBounded(t *testing.T) {
	l := NewLocalLogs().open("r")
	for seq := int64(1); seq <= 5*maxLocalTail; seq++ {
		l.add(&agentv1.StreamChunk{Seq: seq})
	}
	if n := len(l.chunks); n > maxLocalTail {
		t.Errorf("the tail holds %d chunks, want at most %d", n, maxLocalTail)
	}
	if l.covers(1) {
		t.Errorf("a follower at seq 1 is served from a tail that starts at %d", l.first)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	last := int64(1)
	served, err := l.serve(ctx, &last, func([]*agentv1.StreamChunk) error { return nil })
	if served || err != nil || last != 1 {
		t.Errorf("serve behind the tail: %v, %v, at %d; want it handed back untouched", served, err, last)
	}
}
