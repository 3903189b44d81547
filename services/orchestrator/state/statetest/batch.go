package statetest

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// A batch answers each step as the step's own method does, runs every step
// whatever the others answer, and its writes can be run again.

func testBatch(t *testing.T, open func(*testing.T) state.Store) {
	const ttl = time.Hour
	msg := func(text string) *modelv1.Message {
		return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: text}}}}}
	}
	chunk := func(seq int64, text string) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Seq: seq, RunId: "run-1", SessionId: "s1", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: text}}}
	}
	t.Run("a woken run is claimed with what it goes on from", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Create(ctx, newSession("s1", "alice", time.Now())); err != nil {
			t.Fatal(err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.SaveTranscript(ctx, "s1", []*modelv1.Message{msg("hello")}))
		must(s.SaveRun(ctx, &orchestratorv1.RunState{RunId: "run-1", SessionId: "s1", Turns: 1}))
		must(s.Append(ctx, "run-1", chunk(1, "a")))
		must(s.Append(ctx, "run-1", chunk(2, "b")))
		a := state.Lease{RunID: "run-1", SessionID: "s1", Owner: "replica-a"}
		must(s.Acquire(ctx, a, ttl))
		must(s.Suspend(ctx, a, ttl))
		must(s.Expect(ctx, "s1", "call-1", "tok-1", ttl))
		must(s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("ran")}))
		must(s.Cancel(ctx, "run-0"))

		b := a
		b.Owner = "replica-b"
		claim := &state.WakeClaimStep{Lease: b, TTL: ttl}
		run := &state.GetRunStep{RunID: "run-1"}
		cancelled := &state.CancelledStep{RunID: "run-1"}
		transcript := &state.TranscriptStep{SessionID: "s1"}
		last := &state.LastSeqStep{RunID: "run-1"}
		peek := &state.PeekStep{SessionID: "s1", CallID: "call-1"}
		sess := &state.GetSessionStep{SessionID: "s1"}
		if err := s.Batch(ctx, claim, run, cancelled, transcript, last, peek, sess); err != nil {
			t.Fatalf("batch: %v", err)
		}
		defer cancelled.Stop()
		switch {
		case run.Run.GetTurns() != 1:
			t.Errorf("run = %v, want the saved one", run.Run)
		case len(transcript.Msgs) != 1 || !proto.Equal(transcript.Msgs[0], msg("hello")):
			t.Errorf("transcript = %v, want the saved one", transcript.Msgs)
		case last.Seq != 2 || last.Finished:
			t.Errorf("last seq = %d finished=%v, want 2 and not finished", last.Seq, last.Finished)
		case !peek.OK || peek.Delivery.Content.GetResult().GetStdout() != "ran":
			t.Errorf("peek = %+v ok=%v, want the delivered result", peek.Delivery, peek.OK)
		case sess.Session.GetOwner() != "alice":
			t.Errorf("session = %v, want alice's", sess.Session)
		}
		select {
		case <-cancelled.Done:
			t.Error("the run's watch fired without a cancel")
		default:
		}
		if err := s.Renew(ctx, b, ttl); err != nil {
			t.Errorf("the claimer does not hold the run: %v", err)
		}

		// A claim that fails is the batch's error; the reads behind it are
		// still answered, and their misses are their own.
		again := &state.WakeClaimStep{Lease: a, TTL: ttl}
		gone := &state.GetRunStep{RunID: "run-x"}
		was := &state.CancelledStep{RunID: "run-0"}
		none := &state.LastSeqStep{RunID: "run-x"}
		if err := s.Batch(ctx, again, gone, was, none); !errors.Is(err, state.ErrLeaseLost) {
			t.Fatalf("batch with a lost claim: %v, want ErrLeaseLost", err)
		}
		if was.Err == nil {
			defer was.Stop()
		}
		if !errors.Is(again.Err, state.ErrLeaseLost) || !errors.Is(gone.Err, state.ErrNotFound) || was.Err != nil || none.Err != nil || none.Seq != 0 {
			t.Fatalf("steps: claim %v, run %v, cancel %v, last seq %d %v", again.Err, gone.Err, was.Err, none.Seq, none.Err)
		}
		select {
		case <-was.Done:
		case <-ctx.Done():
			t.Fatal("a watch of a run cancelled before it never fired")
		}
	})
	t.Run("a decision goes with the writes that follow from it", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		read := newSession("s1", "alice", time.Now())
		read.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: "call-1", RunId: "run-1"}
		if err := s.Create(ctx, read); err != nil {
			t.Fatal(err)
		}
		read, err := s.Get(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("ran")}); err != nil {
			t.Fatal(err)
		}
		now := proto.Clone(read).(*agentv1.Session)
		now.PendingToolCall, now.LastCompletedTool = nil, "execute_data_collection"
		steps := func() (*state.DecideRecordStep, *state.SwapSessionStep, *state.AppendStep) {
			return &state.DecideRecordStep{SessionID: "s1", CallID: "call-1", Record: state.OutboxRecord{ID: "run-1/call-1", SessionID: "s1", Body: []byte("b")}},
				&state.SwapSessionStep{Was: read, Now: now}, &state.AppendStep{RunID: "run-1", Chunks: []*agentv1.StreamChunk{chunk(1, "result")}}
		}
		decide, swap, appendStep := steps()
		if err := s.Batch(ctx, decide, swap, appendStep); err != nil {
			t.Fatalf("batch: %v", err)
		}
		if !decide.OK || decide.Delivery.Content.GetResult().GetStdout() != "ran" || !swap.Swapped {
			t.Fatalf("decide %+v ok=%v, swapped=%v: want the result and the session swapped", decide.Delivery, decide.OK, swap.Swapped)
		}
		if got, err := s.Get(ctx, "s1"); err != nil || got.GetLastCompletedTool() != "execute_data_collection" {
			t.Fatalf("session after the swap = %v, %v", got, err)
		}
		// Run again, as after a lost answer: the decision and the chunk
		// are the same; the session, no longer as read, is left alone.
		decide, swap, appendStep = steps()
		if err := s.Batch(ctx, decide, swap, appendStep); err != nil {
			t.Fatalf("batch again: %v", err)
		}
		if !decide.OK || swap.Swapped {
			t.Fatalf("again: decide ok=%v swapped=%v, want the result and no swap", decide.OK, swap.Swapped)
		}
		if recs, err := s.Outboxed(ctx, "s1", 10); err != nil || len(recs) != 1 {
			t.Fatalf("outbox = %v, %v: want one record", recs, err)
		}
		if seq, _, err := s.LastSeq(ctx, "run-1"); err != nil || seq != 1 {
			t.Fatalf("last seq = %d, %v: want 1", seq, err)
		}
		// Another chunk at a logged seq is that step's error.
		other := &state.AppendStep{RunID: "run-1", Chunks: []*agentv1.StreamChunk{chunk(1, "other")}}
		if err := s.Batch(ctx, other); !errors.Is(err, state.ErrEventConflict) || !errors.Is(other.Err, state.ErrEventConflict) {
			t.Fatalf("a different chunk at seq 1: %v, want ErrEventConflict", err)
		}
		// A session that is gone is not swapped in.
		if err := s.Batch(ctx, &state.SwapSessionStep{Was: read, Now: newSession("s-gone", "alice", time.Now())}); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("swap of a missing session: %v, want ErrNotFound", err)
		}
	})
	t.Run("a turn starts with the writes before it", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Create(ctx, newSession("s1", "alice", time.Now())); err != nil {
			t.Fatal(err)
		}
		msgs := []*modelv1.Message{msg("hello"), msg("results")}
		rs := &orchestratorv1.RunState{RunId: "run-1", SessionId: "s1", InTurn: true}
		for range 2 {
			if err := s.Batch(ctx, &state.SaveTranscriptStep{SessionID: "s1", Msgs: msgs}, &state.SaveRunStep{Run: rs}, &state.AppendStep{RunID: "run-1", Chunks: []*agentv1.StreamChunk{chunk(1, "turn")}}); err != nil {
				t.Fatalf("batch: %v", err)
			}
		}
		got, err := s.Transcript(ctx, "s1")
		if err != nil || len(got) != 2 {
			t.Fatalf("transcript = %v, %v", got, err)
		}
		if r, err := s.GetRun(ctx, "run-1"); err != nil || !r.GetInTurn() {
			t.Fatalf("run = %v, %v", r, err)
		}
		if seq, _, err := s.LastSeq(ctx, "run-1"); err != nil || seq != 1 {
			t.Fatalf("last seq = %d, %v: want 1", seq, err)
		}
		// The transcript of a session that is gone is not saved.
		if err := s.Batch(ctx, &state.SaveTranscriptStep{SessionID: "s-gone", Msgs: msgs}); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("save the transcript of a missing session: %v, want ErrNotFound", err)
		}
	})
}
