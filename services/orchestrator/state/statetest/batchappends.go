package statetest

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// testAppendSeveral holds an append of several chunks, as a runner makes
// for the deltas of a model turn that arrived together, to the promises of
// an append of one: each chunk logged once under its own seq and in order;
// the same append again (a retry after a lost answer) succeeds and adds
// nothing; one that overlaps the log's end adds only what is new; and a
// refused append, whichever of its chunks is refused, adds none of them.
func testAppendSeveral(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const id = "run-several"
	chunk := func(seq int, text string) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Seq: int64(seq), RunId: id, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: text}}}
	}
	want := func(seq int) *agentv1.StreamChunk { return chunk(seq, fmt.Sprintf("delta %d", seq)) }
	span := func(from, to int) []*agentv1.StreamChunk {
		var out []*agentv1.StreamChunk
		for seq := from; seq <= to; seq++ {
			out = append(out, want(seq))
		}
		return out
	}
	logged := func() []*agentv1.StreamChunk {
		t.Helper()
		var got []*agentv1.StreamChunk
		last, _, err := s.LastSeq(ctx, id)
		if err != nil {
			t.Fatalf("last seq: %v", err)
		}
		if last == 0 {
			return nil
		}
		// Follow returns at a finished log's end; an open one is read up to
		// its last seq.
		stop := errors.New("read to the end")
		err = s.Follow(ctx, id, 0, state.EachChunk(func(c *agentv1.StreamChunk) error {
			got = append(got, c)
			if c.GetSeq() == last {
				return stop
			}
			return nil
		}))
		if err != nil && !errors.Is(err, stop) {
			t.Fatalf("follow: %v", err)
		}
		return got
	}
	check := func(step string, to int) {
		t.Helper()
		got := logged()
		if len(got) != to {
			t.Fatalf("%s: the log holds %d chunks, want %d", step, len(got), to)
		}
		for i, c := range got {
			if !proto.Equal(c, want(i+1)) {
				t.Fatalf("%s: chunk %d is %v, want %v", step, i+1, c, want(i+1))
			}
		}
	}

	if err := s.Append(ctx, id, span(1, 5)...); err != nil {
		t.Fatalf("append seqs 1-5 at once: %v", err)
	}
	check("five chunks in one append", 5)
	if err := s.Append(ctx, id, span(1, 5)...); err != nil {
		t.Fatalf("the same five again (a retry): %v", err)
	}
	check("a retry of the five", 5)
	if err := s.Append(ctx, id, span(4, 8)...); err != nil {
		t.Fatalf("seqs 4-8, of which 4 and 5 are logged: %v", err)
	}
	check("an append overlapping the end", 8)

	// A conflict in the middle of an append that also goes past the end:
	// 9 and 10 are not added.
	bad := span(7, 10)
	bad[1] = chunk(8, "another delta 8")
	if err := s.Append(ctx, id, bad...); !errors.Is(err, state.ErrEventConflict) {
		t.Fatalf("an append whose seq 8 differs from the logged one: %v, want a conflict", err)
	}
	check("a refused append", 8)
	// Seqs that do not increase are refused whole.
	if err := s.Append(ctx, id, want(9), want(11), want(10)); err == nil {
		t.Fatal("an append whose seqs go 9, 11, 10 was accepted")
	}
	check("an append out of order", 8)

	if err := s.Finish(ctx, id); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if err := s.Append(ctx, id, span(7, 9)...); err == nil {
		t.Fatal("an append past the end of a finished log was accepted")
	}
	if err := s.Append(ctx, id, span(6, 8)...); err != nil {
		t.Fatalf("a retry of logged chunks after the log finished: %v", err)
	}
	check("a finished log", 8)
}

// testFollowHandsOverWhatWasRead: a follower gets the chunks already logged
// in one call, in order, and a chunk appended while it waits alone, as soon
// as it is appended (counting, not timing: the follower has it before the
// next append is made).
func testFollowHandsOverWhatWasRead(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const id = "run-follow-together"
	chunk := func(seq int) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Seq: int64(seq), RunId: id, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: fmt.Sprint(seq)}}}
	}
	for seq := 1; seq <= 5; seq++ {
		if err := s.Append(ctx, id, chunk(seq)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
	calls := make(chan []int64)
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(ctx, id, 0, func(cs []*agentv1.StreamChunk) error {
			var seqs []int64
			for _, c := range cs {
				seqs = append(seqs, c.GetSeq())
			}
			calls <- seqs
			return nil
		})
	}()
	next := func() []int64 {
		t.Helper()
		select {
		case got := <-calls:
			return got
		case <-ctx.Done():
			t.Fatal("the follower was handed nothing")
			return nil
		}
	}
	if got := next(); fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("first call %v, want the five logged chunks together", got)
	}
	for seq := 6; seq <= 7; seq++ {
		if err := s.Append(ctx, id, chunk(seq)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
		if got := next(); fmt.Sprint(got) != fmt.Sprintf("[%d]", seq) {
			t.Fatalf("after appending %d the follower got %v, want it alone", seq, got)
		}
	}
	if err := s.Finish(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("follow: %v", err)
	}
}
