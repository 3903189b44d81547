package statetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// The result mailbox: a result posted before the waiter listens is kept, the
// same one twice answered the same, a conflicting one refused; and each result
// taken exactly once.

func result(stdout string) *orchestratorv1.MailboxDelivery {
	return state.ResultDelivery(&hostv1.HostResult{Committed: true, Stdout: stdout})
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
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("early"), Trace: trace}); err != nil {
			t.Fatal(err)
		}
		d, ok, err := s.Peek(ctx, "s1", "call-1")
		if err != nil || !ok {
			t.Fatalf("peek: ok=%v err=%v", ok, err)
		}
		if d.ToolCallID != "call-1" || d.Content.GetResult().GetStdout() != "early" || d.Trace["traceparent"] != trace["traceparent"] {
			t.Fatalf("peeked delivery = %+v", d)
		}
		for i := range 2 {
			d, ok, err := s.Decide(ctx, "s1", "call-1")
			if err != nil || !ok || d.Content.GetResult().GetStdout() != "early" || d.Trace["traceparent"] != trace["traceparent"] {
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
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("late")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("late result: err = %v, want ErrConflict", err)
		}
		if _, ok, err := s.Peek(ctx, "s1", "call-1"); err != nil || ok {
			t.Fatalf("peek after a refused late result: ok=%v err=%v, want nothing", ok, err)
		}
		// The next call replaces the mailbox; the decided one stays refused.
		if err := s.Expect(ctx, "s1", "call-2", "tok-2", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("late")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("late result after the next call: err = %v, want ErrConflict", err)
		}
	})
	t.Run("the same result again is accepted again, a different one refused", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("first")}); err != nil {
				t.Fatalf("delivery #%d of the same result: %v", i+1, err)
			}
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("second")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("different result: err = %v, want ErrConflict", err)
		}
		if _, _, err := s.Decide(ctx, "s1", "call-1"); err != nil {
			t.Fatal(err)
		}
		// Still true once the call is decided and after the next call opened.
		if err := s.Expect(ctx, "s1", "call-2", "tok-2", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("first")}); err != nil {
			t.Fatalf("same result after decide: %v", err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("second")}); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("different result after decide: err = %v, want ErrConflict", err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-9", state.Delivery{Content: result("first")}); !errors.Is(err, state.ErrBadToken) {
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
				if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("first")}); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Deliver(ctx, "s1", tt.call, tt.token, state.Delivery{Content: result("intruder")})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			// The mailbox is as before: the right result is still accepted
			// (or the first one is still the one the run gets).
			if !tt.deliverBefore {
				want = "right"
				if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("right")}); err != nil {
					t.Fatalf("right result after a refused one: %v", err)
				}
			}
			d, ok, err := s.Decide(ctx, "s1", "call-1")
			if err != nil || !ok {
				t.Fatalf("decide: ok=%v err=%v", ok, err)
			}
			if d.Content.GetResult().GetStdout() != want {
				t.Fatalf("run got %q, want %q", d.Content.GetResult().GetStdout(), want)
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
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("stale")}); !errors.Is(err, state.ErrNoPendingCall) {
			t.Fatalf("stale call: err = %v, want ErrNoPendingCall", err)
		}
		if err := s.Deliver(ctx, "s1", "call-2", "tok-2", state.Delivery{Content: result("fresh")}); err != nil {
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
		if err := s.Deliver(ctx, "a", "call-1", "tok-b", state.Delivery{Content: result("x")}); !errors.Is(err, state.ErrBadToken) {
			t.Fatalf("b's token on a: err = %v, want ErrBadToken", err)
		}
		if err := s.Deliver(ctx, "b", "call-1", "tok-b", state.Delivery{Content: result("for b")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "a", "call-1", "tok-a", state.Delivery{Content: result("for a")}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			d, ok, err := s.Decide(ctx, id, "call-1")
			if err != nil || !ok {
				t.Fatalf("decide %s: ok=%v err=%v", id, ok, err)
			}
			if d.Content.GetResult().GetStdout() != "for "+id {
				t.Fatalf("%s got %q", id, d.Content.GetResult().GetStdout())
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
				err := s.Deliver(ctx, sid, "call", "tok", state.Delivery{Content: result(stdout)})
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
		if d.Content.GetResult().GetStdout() != winner.Load() {
			t.Fatalf("%s: the run got %q, the accepted delivery was %q", sid, d.Content.GetResult().GetStdout(), winner.Load())
		}
	}
}
