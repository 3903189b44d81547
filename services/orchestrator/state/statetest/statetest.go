// Package statetest is the conformance suite every state.Store passes: the
// in-process store and the Redis store make the same promises, and this is
// where the promises are written down.
package statetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// patience bounds every wait in the suite. It is a guard against a hang on a
// loaded machine, never a measurement.
const patience = 60 * time.Second

// Run runs the suite; newStore returns an empty store that the suite may
// fill (it is closed by the suite).
func Run(t *testing.T, newStore func(t *testing.T) state.Store) {
	open := func(t *testing.T) state.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Run("sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("update is atomic", func(t *testing.T) { t.Parallel(); testUpdateAtomic(t, open(t)) })
	t.Run("transcript", func(t *testing.T) { t.Parallel(); testTranscript(t, open(t)) })
	t.Run("mailbox", func(t *testing.T) { t.Parallel(); testMailbox(t, open) })
	t.Run("deliver exactly once", func(t *testing.T) { t.Parallel(); testExactlyOnce(t, open(t)) })
	t.Run("signals", func(t *testing.T) { t.Parallel(); testSignals(t, open(t)) })
	t.Run("events", func(t *testing.T) { t.Parallel(); testEvents(t, open(t)) })
	t.Run("leases", func(t *testing.T) { t.Parallel(); testLeases(t, open(t)) })
	t.Run("a due run goes to one claimer", func(t *testing.T) { t.Parallel(); testClaimOnce(t, open(t)) })
	t.Run("runs", func(t *testing.T) { t.Parallel(); testRuns(t, open(t)) })
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

func newSession(id, owner string, created time.Time) *agentv1.Session {
	return &agentv1.Session{
		SessionId:  id,
		HostApp:    "freecad",
		Model:      "anthropic/claude-sonnet-4-5",
		Owner:      owner,
		CreateTime: timestamppb.New(created),
	}
}

func testSessions(t *testing.T, s state.Store) {
	ctx := testContext(t)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"s-old", "s-mid", "s-new"} {
		if err := s.Create(ctx, newSession(id, "ada", base.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	if err := s.Create(ctx, newSession("s-other", "grace", base)); err != nil {
		t.Fatalf("create s-other: %v", err)
	}

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"get returns what was created", func(t *testing.T) {
			got, err := s.Get(ctx, "s-mid")
			if err != nil {
				t.Fatal(err)
			}
			if want := newSession("s-mid", "ada", base.Add(time.Minute)); !proto.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		}},
		{"unknown session is not found", func(t *testing.T) {
			if _, err := s.Get(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("get: err = %v, want ErrNotFound", err)
			}
			if _, err := s.Update(ctx, "nope", func(*agentv1.Session) error { return nil }); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("update: err = %v, want ErrNotFound", err)
			}
		}},
		{"duplicate id is refused and the first session kept", func(t *testing.T) {
			if err := s.Create(ctx, newSession("s-old", "mallory", base)); err == nil {
				t.Fatal("second create with the same id succeeded")
			}
			got, err := s.Get(ctx, "s-old")
			if err != nil {
				t.Fatal(err)
			}
			if got.GetOwner() != "ada" {
				t.Fatalf("owner = %q after a refused create, want ada", got.GetOwner())
			}
		}},
		{"empty id is refused", func(t *testing.T) {
			if err := s.Create(ctx, newSession("", "ada", base)); err == nil {
				t.Fatal("create with an empty id succeeded")
			}
		}},
		{"update stores and returns the change", func(t *testing.T) {
			got, err := s.Update(ctx, "s-new", func(sess *agentv1.Session) error {
				sess.ActiveRunId = "run-1"
				sess.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: "call-1", RunId: "run-1"}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := s.Get(ctx, "s-new")
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, stored) || stored.GetPendingToolCall().GetToolCallId() != "call-1" {
				t.Fatalf("returned %v, stored %v", got, stored)
			}
		}},
		{"an error from fn aborts the update", func(t *testing.T) {
			boom := errors.New("boom")
			_, err := s.Update(ctx, "s-mid", func(sess *agentv1.Session) error {
				sess.CurrentScript = "half-applied"
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the callback's error", err)
			}
			got, err := s.Get(ctx, "s-mid")
			if err != nil {
				t.Fatal(err)
			}
			if got.GetCurrentScript() != "" {
				t.Fatalf("current script = %q after an aborted update", got.GetCurrentScript())
			}
		}},
		{"list is per owner, newest first", func(t *testing.T) {
			got, err := s.List(ctx, "ada")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, sess := range got {
				ids = append(ids, sess.GetSessionId())
			}
			if fmt.Sprint(ids) != "[s-new s-mid s-old]" {
				t.Fatalf("ids = %v, want [s-new s-mid s-old]", ids)
			}
			none, err := s.List(ctx, "nobody")
			if err != nil || len(none) != 0 {
				t.Fatalf("list of an unknown owner = %v, %v", none, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func testUpdateAtomic(t *testing.T, s state.Store) {
	ctx := testContext(t)
	if err := s.Create(ctx, newSession("counter", "ada", time.Now())); err != nil {
		t.Fatal(err)
	}
	const writers = 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			_, err := s.Update(ctx, "counter", func(sess *agentv1.Session) error {
				sess.IterationCount++
				return nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	got, err := s.Get(ctx, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetIterationCount() != writers {
		t.Fatalf("iteration count = %d after %d concurrent increments", got.GetIterationCount(), writers)
	}
}

func testTranscript(t *testing.T, s state.Store) {
	ctx := testContext(t)
	if err := s.Create(ctx, newSession("talk", "ada", time.Now())); err != nil {
		t.Fatal(err)
	}
	msg := func(text string) *modelv1.Message {
		return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: text}}}}}
	}
	tests := []struct {
		name string
		save []*modelv1.Message
	}{
		{"empty", nil},
		{"three messages", []*modelv1.Message{msg("a"), msg("b"), msg("c")}},
		{"replaced by a shorter one", []*modelv1.Message{msg("z")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.SaveTranscript(ctx, "talk", tt.save); err != nil {
				t.Fatal(err)
			}
			got, err := s.Transcript(ctx, "talk")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.save) {
				t.Fatalf("got %d messages, want %d", len(got), len(tt.save))
			}
			for i := range got {
				if !proto.Equal(got[i], tt.save[i]) {
					t.Fatalf("message %d = %v, want %v", i, got[i], tt.save[i])
				}
			}
		})
	}
	t.Run("unknown session", func(t *testing.T) {
		if _, err := s.Transcript(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("transcript: err = %v, want ErrNotFound", err)
		}
		if err := s.SaveTranscript(ctx, "nope", []*modelv1.Message{msg("x")}); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("save: err = %v, want ErrNotFound", err)
		}
	})
}

func result(stdout string) *hostv1.HostResult {
	return &hostv1.HostResult{Committed: true, Stdout: stdout}
}

func testMailbox(t *testing.T, open func(*testing.T) state.Store) {
	const ttl = 10 * time.Minute
	t.Run("a result delivered before the run looks is not lost", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Peek(ctx, "s1", "call-1"); err != nil || ok {
			t.Fatalf("peek before delivery: ok=%v err=%v, want nothing", ok, err)
		}
		trace := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("early"), Trace: trace}); err != nil {
			t.Fatal(err)
		}
		d, ok, err := s.Peek(ctx, "s1", "call-1")
		if err != nil || !ok {
			t.Fatalf("peek: ok=%v err=%v", ok, err)
		}
		if d.ToolCallID != "call-1" || d.Result.GetStdout() != "early" || d.Trace["traceparent"] != trace["traceparent"] {
			t.Fatalf("peeked delivery = %+v", d)
		}
		for i := range 2 {
			d, ok, err := s.Decide(ctx, "s1", "call-1")
			if err != nil || !ok || d.Result.GetStdout() != "early" || d.Trace["traceparent"] != trace["traceparent"] {
				t.Fatalf("decide #%d: %+v ok=%v err=%v, want the delivered result", i+1, d, ok, err)
			}
		}
	})
	t.Run("deciding without a result refuses every later one", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Decide(ctx, "s1", "call-1"); err != nil || ok {
			t.Fatalf("decide: ok=%v err=%v, want no result", ok, err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("late")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("late result: err = %v, want ErrConflict", err)
		}
		if _, ok, err := s.Peek(ctx, "s1", "call-1"); err != nil || ok {
			t.Fatalf("peek after a refused late result: ok=%v err=%v, want nothing", ok, err)
		}
		// The next call replaces the mailbox; the decided one stays refused.
		if err := s.Expect(ctx, "s1", "call-2", "tok-2", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("late")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("late result after the next call: err = %v, want ErrConflict", err)
		}
	})
	t.Run("the same result again is accepted again, a different one refused", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("first")}); err != nil {
				t.Fatalf("delivery #%d of the same result: %v", i+1, err)
			}
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("second")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("different result: err = %v, want ErrConflict", err)
		}
		if _, _, err := s.Decide(ctx, "s1", "call-1"); err != nil {
			t.Fatal(err)
		}
		// Still true once the call is decided and after the next call opened.
		if err := s.Expect(ctx, "s1", "call-2", "tok-2", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("first")}); err != nil {
			t.Fatalf("same result after decide: %v", err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("second")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("different result after decide: err = %v, want ErrConflict", err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-9", state.Delivery{Result: result("first")}); !errors.Is(err, state.ErrBadToken) {
			t.Fatalf("wrong token after decide: err = %v, want ErrBadToken", err)
		}
	})

	refusals := []struct {
		name          string
		call, token   string
		deliverBefore bool
		want          error
	}{
		{name: "unknown call", call: "call-9", token: "tok-1", want: state.ErrNoPendingCall},
		{name: "wrong token", call: "call-1", token: "tok-9", want: state.ErrBadToken},
		{name: "conflicting result", call: "call-1", token: "tok-1", deliverBefore: true, want: state.ErrConflict},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.name+" and changes nothing", func(t *testing.T) {
			s, ctx := open(t), testContext(t)
			if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
				t.Fatal(err)
			}
			want := "none"
			if tt.deliverBefore {
				want = "first"
				if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("first")}); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Deliver(ctx, "s1", tt.call, tt.token, state.Delivery{Result: result("intruder")})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			// The mailbox is as before: the right result is still accepted
			// (or the first one is still the one the run gets).
			if !tt.deliverBefore {
				want = "right"
				if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("right")}); err != nil {
					t.Fatalf("right result after a refused one: %v", err)
				}
			}
			d, ok, err := s.Decide(ctx, "s1", "call-1")
			if err != nil || !ok {
				t.Fatalf("decide: ok=%v err=%v", ok, err)
			}
			if d.Result.GetStdout() != want {
				t.Fatalf("run got %q, want %q", d.Result.GetStdout(), want)
			}
		})
	}
	t.Run("a new call replaces the old one", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Expect(ctx, "s1", "call-2", "tok-2", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Result: result("stale")}); !errors.Is(err, state.ErrNoPendingCall) {
			t.Fatalf("stale call: err = %v, want ErrNoPendingCall", err)
		}
		if err := s.Deliver(ctx, "s1", "call-2", "tok-2", state.Delivery{Result: result("fresh")}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Decide(ctx, "s1", "call-1"); err != nil || ok {
			t.Fatalf("decide the replaced call: ok=%v err=%v, want nothing", ok, err)
		}
	})
	t.Run("sessions do not share a mailbox", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		for _, id := range []string{"a", "b"} {
			if err := s.Expect(ctx, id, "call-1", "tok-"+id, ttl); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Deliver(ctx, "a", "call-1", "tok-b", state.Delivery{Result: result("x")}); !errors.Is(err, state.ErrBadToken) {
			t.Fatalf("b's token on a: err = %v, want ErrBadToken", err)
		}
		if err := s.Deliver(ctx, "b", "call-1", "tok-b", state.Delivery{Result: result("for b")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "a", "call-1", "tok-a", state.Delivery{Result: result("for a")}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			d, ok, err := s.Decide(ctx, id, "call-1")
			if err != nil || !ok {
				t.Fatalf("decide %s: ok=%v err=%v", id, ok, err)
			}
			if d.Result.GetStdout() != "for "+id {
				t.Fatalf("%s got %q", id, d.Result.GetStdout())
			}
		}
	})
}

func testExactlyOnce(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const sessions, posters = 20, 16
	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		if err := s.Expect(ctx, sid, "call", "tok", time.Hour); err != nil {
			t.Fatal(err)
		}
		var accepted atomic.Int32
		var winner atomic.Value
		var pg sync.WaitGroup
		for p := range posters {
			pg.Go(func() {
				stdout := fmt.Sprintf("poster %d", p)
				err := s.Deliver(ctx, sid, "call", "tok", state.Delivery{Result: result(stdout)})
				switch {
				case err == nil:
					accepted.Add(1)
					winner.Store(stdout)
				case !errors.Is(err, state.ErrConflict):
					t.Errorf("deliver %s: %v", sid, err)
				}
			})
		}
		pg.Wait()
		if n := accepted.Load(); n != 1 {
			t.Fatalf("%s: %d of %d concurrent different deliveries accepted, want exactly 1", sid, n, posters)
		}
		d, ok, err := s.Decide(ctx, sid, "call")
		if err != nil || !ok {
			t.Fatalf("decide %s: ok=%v err=%v", sid, ok, err)
		}
		if d.Result.GetStdout() != winner.Load() {
			t.Fatalf("%s: the run got %q, the accepted delivery was %q", sid, d.Result.GetStdout(), winner.Load())
		}
	}
}

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
	err := s.Follow(ctx, run, after, func(c *agentv1.StreamChunk) error {
		if c.GetRunId() != run {
			return fmt.Errorf("chunk of run %q in the log of %q", c.GetRunId(), run)
		}
		seqs = append(seqs, c.GetSeq())
		return nil
	})
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
				err := s.Follow(ctx, "run-live", 0, func(c *agentv1.StreamChunk) error {
					seqs = append(seqs, c.GetSeq())
					if c.GetSeq() == 1 {
						seen <- struct{}{}
					}
					return nil
				})
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
		if err := s.Follow(ctx, "run-stop", 0, func(*agentv1.StreamChunk) error { return halt }); !errors.Is(err, halt) {
			t.Fatalf("err = %v, want the callback's error", err)
		}
	})
	t.Run("follow ends with its context", func(t *testing.T) {
		if err := s.Append(ctx, "run-open", chunk("run-open", 1, "x")); err != nil {
			t.Fatal(err)
		}
		fctx, cancel := context.WithCancel(ctx)
		err := s.Follow(fctx, "run-open", 0, func(*agentv1.StreamChunk) error { cancel(); return nil })
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

func testLeases(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const ttl = time.Hour
	a := state.Lease{RunID: "run-1", SessionID: "s1", Owner: "replica-a"}
	b := a
	b.Owner = "replica-b"
	due := func() error {
		got, err := s.Due(ctx, 100)
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].RunID != "run-1" || got[0].SessionID != "s1" || got[0].Owner != "" {
			return fmt.Errorf("due = %+v, want run-1 of s1 without an owner", got)
		}
		return nil
	}
	notDue := func() error {
		got, err := s.Due(ctx, 100)
		if err != nil {
			return err
		}
		if len(got) != 0 {
			return fmt.Errorf("due = %+v, want none", got)
		}
		return nil
	}
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"a acquires", func() error { return s.Acquire(ctx, a, ttl) }, nil},
		{"b cannot acquire a held lease", func() error { return s.Acquire(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a acquires again", func() error { return s.Acquire(ctx, a, ttl) }, nil},
		{"a renews", func() error { return s.Renew(ctx, a, ttl) }, nil},
		{"b cannot renew", func() error { return s.Renew(ctx, b, ttl) }, state.ErrLeaseLost},
		{"b cannot claim a run that is not due", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a wake of an owned run changes nothing", func() error { return s.Wake(ctx, "run-1") }, nil},
		{"so nothing is due", notDue, nil},
		{"b's release leaves it alone", func() error { return s.Release(ctx, b) }, nil},
		{"so a still renews", func() error { return s.Renew(ctx, a, ttl) }, nil},
		{"a suspends the run until its deadline", func() error { return s.Suspend(ctx, a, ttl) }, nil},
		{"a no longer owns it", func() error { return s.Renew(ctx, a, ttl) }, state.ErrLeaseLost},
		{"a suspended run is not due before its deadline", notDue, nil},
		{"nor can it be claimed", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a result wakes it", func() error { return s.Wake(ctx, "run-1") }, nil},
		{"so it is due, with no owner", due, nil},
		{"b claims it", func() error { return s.Claim(ctx, b, ttl) }, nil},
		{"a cannot claim it too", func() error { return s.Claim(ctx, a, ttl) }, state.ErrLeaseLost},
		{"b renews", func() error { return s.Renew(ctx, b, ttl) }, nil},
		{"and it is not due", notDue, nil},
		{"b suspends with no wait (a drain hands it over)", func() error { return s.Suspend(ctx, b, 0) }, nil},
		{"so it is due at once", due, nil},
		{"a claims it", func() error { return s.Claim(ctx, a, ttl) }, nil},
		{"a releases", func() error { return s.Release(ctx, a) }, nil},
		{"a cannot renew a released lease", func() error { return s.Renew(ctx, a, ttl) }, state.ErrLeaseLost},
		{"nobody can claim a released run", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a released run is never due", notDue, nil},
		{"b acquires the free lease", func() error { return s.Acquire(ctx, b, ttl) }, nil},
		{"b releases", func() error { return s.Release(ctx, b) }, nil},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
	}
}

// waitDue polls until n runs are due; the store's own clock decides.
func waitDue(ctx context.Context, t *testing.T, s state.Store, n int) {
	t.Helper()
	for {
		got, err := s.Due(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d runs due: %v", len(got), n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func testClaimOnce(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const runs, claimers = 30, 8
	const short = 20 * time.Millisecond
	for i := range runs {
		l := state.Lease{RunID: fmt.Sprintf("run-%d", i), SessionID: fmt.Sprintf("s-%d", i), Owner: "replica-dead"}
		if err := s.Acquire(ctx, l, short); err != nil {
			t.Fatal(err)
		}
	}
	live := state.Lease{RunID: "run-live", SessionID: "s-live", Owner: "replica-alive"}
	if err := s.Acquire(ctx, live, time.Hour); err != nil {
		t.Fatal(err)
	}
	// A lease that ran out but that nobody claimed is still its owner's:
	// after an outage the owner renews before anyone takes it.
	late := state.Lease{RunID: "run-late", SessionID: "s-late", Owner: "replica-slow"}
	if err := s.Acquire(ctx, late, short); err != nil {
		t.Fatal(err)
	}
	waitDue(ctx, t, s, runs+1)
	if err := s.Renew(ctx, late, time.Hour); err != nil {
		t.Fatalf("renewing an expired, unclaimed lease: %v", err)
	}

	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Go(func() {
			got, err := s.Due(ctx, 1000)
			if err != nil {
				t.Error(err)
				return
			}
			for _, l := range got {
				if l.RunID == "run-live" || l.RunID == "run-late" {
					t.Errorf("%s is due, but its owner holds it", l.RunID)
				}
				if l.Owner != "replica-dead" || l.SessionID != "s-"+l.RunID[len("run-"):] {
					t.Errorf("lease came back as %+v", l)
				}
				l.Owner = fmt.Sprintf("claimer-%d", c)
				err := s.Claim(ctx, l, time.Hour)
				if errors.Is(err, state.ErrLeaseLost) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				taken[l.RunID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(taken) != runs {
		t.Fatalf("%d distinct runs claimed, want %d: %v", len(taken), runs, taken)
	}
	for run, n := range taken {
		if n != 1 {
			t.Fatalf("%s was claimed %d times", run, n)
		}
	}
	if err := s.Renew(ctx, state.Lease{RunID: "run-0", SessionID: "s-0", Owner: "replica-dead"}, time.Hour); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renewing a claimed lease: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(ctx, live, time.Hour); err != nil {
		t.Fatalf("the live lease was taken: %v", err)
	}
}

func testRuns(t *testing.T, s state.Store) {
	ctx := testContext(t)
	if _, err := s.GetRun(ctx, "run-x"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("unknown run: err = %v, want ErrNotFound", err)
	}
	r := &orchestratorv1.RunState{RunId: "run-1", SessionId: "s1", Turns: 2, Results: []*modelv1.ToolResultBlock{{ToolUseId: "call-1", Text: "ok"}}}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Turns = 3 // the store keeps its own copy
	got, err := s.GetRun(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTurns() != 2 || got.GetResults()[0].GetText() != "ok" {
		t.Fatalf("run = %v", got)
	}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, "run-1"); got.GetTurns() != 3 {
		t.Fatalf("saved again: turns = %d, want 3", got.GetTurns())
	}
}
