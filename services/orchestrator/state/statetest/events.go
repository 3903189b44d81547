package statetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Cancel signals and each run's event log.

func testSignals(t *testing.T, s state.Store) {
	ctx := testContext(t)
	t.Run("cancel before the watch is seen", func(t *testing.T) {
		if err := s.Cancel(ctx, "run-early"); err != nil {
			t.Fatal(err)
		}
		done, stop, err := s.Cancelled(ctx, "run-early")
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("an earlier cancel was not seen")
		}
	})
	t.Run("cancel after the watch is seen and only by its run", func(t *testing.T) {
		done, stop, err := s.Cancelled(ctx, "run-late")
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		other, stopOther, err := s.Cancelled(ctx, "run-other")
		if err != nil {
			t.Fatal(err)
		}
		defer stopOther()
		if err := s.Cancel(ctx, "run-late"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("cancel was not seen")
		}
		// Cancels of one run are ordered before a later cancel of another:
		// cancelling run-other now and seeing it proves run-late's cancel
		// did not close it.
		select {
		case <-other:
			t.Fatal("cancel of run-late closed run-other's watch")
		default:
		}
		if err := s.Cancel(ctx, "run-other"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-other:
		case <-ctx.Done():
			t.Fatal("cancel of run-other was not seen")
		}
	})
	t.Run("stop releases a watch that never fired", func(t *testing.T) {
		_, stop, err := s.Cancelled(ctx, "run-quiet")
		if err != nil {
			t.Fatal(err)
		}
		stop()
		stop()
	})
}

func chunk(run string, seq int64, text string) *agentv1.StreamChunk {
	return &agentv1.StreamChunk{Seq: seq, RunId: run, SessionId: "s1", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: text}}}
}

func collect(ctx context.Context, s state.Store, run string, after int64) ([]int64, error) {
	var seqs []int64
	err := s.Follow(ctx, run, after, state.EachChunk(func(c *agentv1.StreamChunk) error {
		if c.GetRunId() != run {
			return fmt.Errorf("chunk of run %q in the log of %q", c.GetRunId(), run)
		}
		seqs = append(seqs, c.GetSeq())
		return nil
	}))
	return seqs, err
}

func testEvents(t *testing.T, s state.Store) {
	ctx := testContext(t)
	t.Run("replay after a seq, then finish", func(t *testing.T) {
		for seq := int64(1); seq <= 5; seq++ {
			if err := s.Append(ctx, "run-done", chunk("run-done", seq, "x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Finish(ctx, "run-done"); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			after int64
			want  string
		}{{0, "[1 2 3 4 5]"}, {3, "[4 5]"}, {5, "[]"}} {
			got, err := collect(ctx, s, "run-done", tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tt.want && !(tt.want == "[]" && len(got) == 0) {
				t.Fatalf("after %d: got %v, want %s", tt.after, got, tt.want)
			}
		}
	})
	t.Run("follow live until finish", func(t *testing.T) {
		if err := s.Append(ctx, "run-live", chunk("run-live", 1, "first")); err != nil {
			t.Fatal(err)
		}
		type res struct {
			seqs []int64
			err  error
		}
		const followers = 3
		out := make(chan res, followers)
		seen := make(chan struct{}, followers)
		for range followers {
			go func() {
				var seqs []int64
				err := s.Follow(ctx, "run-live", 0, state.EachChunk(func(c *agentv1.StreamChunk) error {
					seqs = append(seqs, c.GetSeq())
					if c.GetSeq() == 1 {
						seen <- struct{}{}
					}
					return nil
				}))
				out <- res{seqs, err}
			}()
		}
		// Every follower has replayed seq 1 and is now live.
		for range followers {
			<-seen
		}
		for seq := int64(2); seq <= 40; seq++ {
			if err := s.Append(ctx, "run-live", chunk("run-live", seq, "more")); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Finish(ctx, "run-live"); err != nil {
			t.Fatal(err)
		}
		for range followers {
			r := <-out
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.seqs) != 40 || r.seqs[0] != 1 || r.seqs[39] != 40 {
				t.Fatalf("follower saw %v", r.seqs)
			}
		}
	})
	t.Run("unknown run is not found", func(t *testing.T) {
		if _, err := collect(ctx, s, "run-never", 0); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("an error from fn stops the follow", func(t *testing.T) {
		if err := s.Append(ctx, "run-stop", chunk("run-stop", 1, "x")); err != nil {
			t.Fatal(err)
		}
		halt := errors.New("client went away")
		if err := s.Follow(ctx, "run-stop", 0, state.EachChunk(func(*agentv1.StreamChunk) error { return halt })); !errors.Is(err, halt) {
			t.Fatalf("err = %v, want the callback's error", err)
		}
	})
	t.Run("follow ends with its context", func(t *testing.T) {
		if err := s.Append(ctx, "run-open", chunk("run-open", 1, "x")); err != nil {
			t.Fatal(err)
		}
		fctx, cancel := context.WithCancel(ctx)
		err := s.Follow(fctx, "run-open", 0, state.EachChunk(func(*agentv1.StreamChunk) error { cancel(); return nil }))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("seq must increase", func(t *testing.T) {
		if err := s.Append(ctx, "run-order", chunk("run-order", 2, "x")); err != nil {
			t.Fatal(err)
		}
		for _, seq := range []int64{2, 1} {
			if err := s.Append(ctx, "run-order", chunk("run-order", seq, "again")); err == nil {
				t.Fatalf("append of seq %d after seq 2 succeeded", seq)
			}
		}
	})
	t.Run("an append repeated after a lost answer is success", func(t *testing.T) {
		// A retried write whose first try reached the store: the same
		// chunk at the same seq is the same write, a different one is a
		// conflict.
		for range 2 {
			if err := s.Append(ctx, "run-again", chunk("run-again", 1, "first")); err != nil {
				t.Fatalf("append seq 1 again: %v", err)
			}
		}
		if err := s.Append(ctx, "run-again", chunk("run-again", 2, "second")); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "run-again", chunk("run-again", 1, "first")); err != nil {
			t.Fatalf("append seq 1 again after seq 2: %v", err)
		}
		if err := s.Append(ctx, "run-again", chunk("run-again", 2, "other")); !errors.Is(err, state.ErrEventConflict) {
			t.Fatalf("a different chunk at seq 2: %v, want ErrEventConflict", err)
		}
		for range 2 {
			if err := s.Finish(ctx, "run-again"); err != nil {
				t.Fatalf("finish: %v", err)
			}
		}
		// A retry whose first try landed before the log finished is still
		// that write; anything else after the end is refused.
		if err := s.Append(ctx, "run-again", chunk("run-again", 2, "second")); err != nil {
			t.Fatalf("append seq 2 again after finish: %v", err)
		}
		if err := s.Append(ctx, "run-again", chunk("run-again", 2, "other")); !errors.Is(err, state.ErrEventConflict) {
			t.Fatalf("a different chunk at seq 2 after finish: %v, want ErrEventConflict", err)
		}
		if err := s.Append(ctx, "run-again", chunk("run-again", 3, "late")); err == nil || errors.Is(err, state.ErrEventConflict) {
			t.Fatalf("append of seq 3 after finish: %v, want a refusal that is no conflict", err)
		}
		if seq, finished, err := s.LastSeq(ctx, "run-again"); err != nil || seq != 2 || !finished {
			t.Fatalf("LastSeq after finishing twice = %d, %v, %v; want 2, true, nil", seq, finished, err)
		}
		got, err := collect(ctx, s, "run-again", 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("log = %v, %v; want seqs 1 and 2 once each", got, err)
		}
	})
	t.Run("nothing is appended after finish", func(t *testing.T) {
		if err := s.Append(ctx, "run-closed", chunk("run-closed", 1, "x")); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, "run-closed"); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "run-closed", chunk("run-closed", 2, "late")); err == nil {
			t.Fatal("append after finish succeeded")
		}
	})
}
