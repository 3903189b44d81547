package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
)

func TestMailbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := memory.New(nil)
	if err := s.Create(ctx, &agentv1.Session{SessionId: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Expect(ctx, "s1", "c1", "tok", time.Hour); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name        string
		callID, tok string
		want        error
	}{
		{"unknown call id", "c2", "tok", state.ErrNoPendingCall},
		{"wrong token", "c1", "nope", state.ErrBadToken},
		{"the pending call", "c1", "tok", nil},
		{"the same result again", "c1", "tok", state.ErrConflict},
	}
	for _, st := range steps {
		err := s.Deliver(ctx, "s1", st.callID, st.tok, state.Delivery{Content: state.ResultDelivery(&hostv1.HostResult{Stdout: st.name})})
		if !errors.Is(err, st.want) {
			t.Errorf("%s: %v, want %v", st.name, err, st.want)
		}
	}
	// The result was delivered before the run looked; it is not lost, and
	// the refused ones changed nothing.
	d, ok, err := s.Decide(ctx, "s1", "c1")
	if err != nil || !ok || d.Content.GetResult().GetStdout() != "the pending call" {
		t.Fatalf("decide = %v, %v, %v; want the accepted result", d, ok, err)
	}
	if err := s.Deliver(ctx, "s1", "c1", "tok", state.Delivery{}); !errors.Is(err, state.ErrConflict) {
		t.Errorf("another result after decide: %v, want ErrConflict", err)
	}
}

func TestMailboxExpires(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memory.New(func() time.Time { return now })
	_ = s.Expect(ctx, "s1", "c1", "tok", time.Minute)
	now = now.Add(2 * time.Minute)
	if err := s.Deliver(ctx, "s1", "c1", "tok", state.Delivery{}); !errors.Is(err, state.ErrNoPendingCall) {
		t.Errorf("deliver after the ttl: %v, want ErrNoPendingCall", err)
	}
}

func TestEventsReplayThenFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := memory.New(nil)
	for i := int64(1); i <= 3; i++ {
		if err := s.Append(ctx, "r1", &agentv1.StreamChunk{Seq: i}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan int64, 10)
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(ctx, "r1", 1, state.EachChunk(func(c *agentv1.StreamChunk) error { got <- c.GetSeq(); return nil }))
	}()
	// Seq 2 and 3 are replayed before seq 4 is appended.
	for _, want := range []int64{2, 3} {
		if seq := <-got; seq != want {
			t.Fatalf("got seq %d, want %d", seq, want)
		}
	}
	_ = s.Append(ctx, "r1", &agentv1.StreamChunk{Seq: 4})
	if seq := <-got; seq != 4 {
		t.Fatalf("got seq %d, want 4", seq)
	}
	_ = s.Finish(ctx, "r1")
	if err := <-done; err != nil {
		t.Errorf("follow after finish: %v", err)
	}
	if err := s.Follow(ctx, "missing", 0, state.EachChunk(func(*agentv1.StreamChunk) error { return nil })); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("follow of an unknown run: %v, want ErrNotFound", err)
	}
}

func TestCancelBeforeWatch(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	_ = s.Cancel(ctx, "r1")
	done, stop, err := s.Cancelled(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	select {
	case <-done:
	default:
		t.Error("a cancel that came before the watch was missed")
	}
}

func TestLeases(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memory.New(func() time.Time { return now })
	a := state.Lease{RunID: "r1", SessionID: "s1", Owner: "a"}
	b := state.Lease{RunID: "r1", SessionID: "s1", Owner: "b"}
	if err := s.Acquire(ctx, a, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, b, 15*time.Second); !errors.Is(err, state.ErrLeaseLost) {
		t.Errorf("second owner acquire: %v, want ErrLeaseLost", err)
	}
	now = now.Add(10 * time.Second)
	if err := s.Renew(ctx, a, 15*time.Second); err != nil {
		t.Errorf("renew: %v", err)
	}
	now = now.Add(14 * time.Second)
	if l, _ := s.Due(ctx, 10); len(l) != 0 {
		t.Errorf("due before the ttl: %v", l)
	}
	now = now.Add(2 * time.Second)
	l, _ := s.Due(ctx, 10)
	if len(l) != 1 || l[0] != a {
		t.Errorf("due = %v, want the lease of a", l)
	}
	if err := s.Claim(ctx, b, 15*time.Second); err != nil {
		t.Errorf("claim of a lease that ran out: %v", err)
	}
	if l, _ := s.Due(ctx, 10); len(l) != 0 {
		t.Errorf("a claimed lease is still due: %v", l)
	}
	if err := s.Renew(ctx, a, 15*time.Second); !errors.Is(err, state.ErrLeaseLost) {
		t.Errorf("renew by the old owner: %v, want ErrLeaseLost", err)
	}
}

func TestUpdateIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	_ = s.Create(ctx, &agentv1.Session{SessionId: "s1"})
	done := make(chan struct{})
	for range 50 {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = s.Update(ctx, "s1", func(x *agentv1.Session) error { x.IterationCount++; return nil })
		}()
	}
	for range 50 {
		<-done
	}
	got, _ := s.Get(ctx, "s1")
	if got.GetIterationCount() != 50 {
		t.Errorf("iteration count %d after 50 concurrent updates, want 50", got.GetIterationCount())
	}
	if _, err := s.Update(ctx, "s1", func(*agentv1.Session) error { return state.ErrRunActive }); !errors.Is(err, state.ErrRunActive) {
		t.Errorf("update error: %v, want fn's error", err)
	}
}
