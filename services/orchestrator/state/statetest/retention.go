package statetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state"
)

// Retention is how long a store under test keeps its hot state
// (NEXUS_HOT_RETENTION).
type Retention struct {
	// Sessions is how long a session and its transcript are kept after
	// their last write; zero keeps them until they are deleted.
	Sessions time.Duration
	// Events is how long a run's event log is kept after its last event.
	Events time.Duration
}

// RetainingStore opens an empty store that keeps its hot state for r, and
// advance, which moves the store's clock on by d: at once for a store on a
// clock the test holds, by waiting for a store on a real one (Redis, whose
// clock no test can move). The suite closes the store.
type RetainingStore func(t *testing.T, r Retention) (s state.Store, advance func(d time.Duration))

// RetentionTTL is the retention the cases keep. Stores on a real clock wait
// through it, so it is short; it is long enough that such a store reads back
// what it has just written, and that a write in the middle of it lands well
// before its end, on a loaded machine.
const RetentionTTL = 4 * time.Second

// RunRetention runs the retention cases: what a store keeps, it keeps for
// its retention after the last write and no longer.
func RunRetention(t *testing.T, open RetainingStore) {
	const ttl = RetentionTTL
	opened := func(t *testing.T, r Retention) (state.Store, func(time.Duration)) {
		t.Helper()
		s, advance := open(t, r)
		t.Cleanup(func() { _ = s.Close() })
		return s, advance
	}
	t.Run("a session and its transcript go after the retention", func(t *testing.T) {
		t.Parallel()
		s, advance := opened(t, Retention{Sessions: ttl, Events: ttl})
		ctx := testContext(t)
		if err := s.Create(ctx, newSession("s-brief", "ada", time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTranscript(ctx, "s-brief", []*modelv1.Message{TextMessage("hello")}); err != nil {
			t.Fatal(err)
		}
		if list, err := s.List(ctx, "ada"); err != nil || len(list) != 1 {
			t.Fatalf("list before the retention = %v, %v; want the session", list, err)
		}
		advance(ttl + ttl/2)
		if _, err := s.Get(ctx, "s-brief"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("get after the retention: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Transcript(ctx, "s-brief"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("transcript after the retention: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Update(ctx, "s-brief", func(*agentv1.Session) error { return nil }); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("update after the retention: err = %v, want ErrNotFound", err)
		}
		if list, err := s.List(ctx, "ada"); err != nil || len(list) != 0 {
			t.Fatalf("list after the retention = %v, %v; want none", list, err)
		}
		// The id is free again, and the new session starts with an empty
		// transcript.
		if err := s.Create(ctx, newSession("s-brief", "ada", time.Now())); err != nil {
			t.Fatalf("create after the retention: %v", err)
		}
		if msgs, err := s.Transcript(ctx, "s-brief"); err != nil || len(msgs) != 0 {
			t.Fatalf("transcript of the new session = %v, %v; want empty", msgs, err)
		}
	})
	t.Run("a write renews the retention", func(t *testing.T) {
		t.Parallel()
		s, advance := opened(t, Retention{Sessions: ttl, Events: ttl})
		ctx := testContext(t)
		if err := s.Create(ctx, newSession("s-busy", "ada", time.Now())); err != nil {
			t.Fatal(err)
		}
		advance(ttl * 3 / 5)
		if _, err := s.Update(ctx, "s-busy", func(sess *agentv1.Session) error { sess.IterationCount++; return nil }); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTranscript(ctx, "s-busy", []*modelv1.Message{TextMessage("still here")}); err != nil {
			t.Fatal(err)
		}
		advance(ttl * 3 / 5)
		// Past the retention since the create, within it since the update.
		if got, err := s.Get(ctx, "s-busy"); err != nil || got.GetIterationCount() != 1 {
			t.Fatalf("get after a renewing update = %v, %v; want the updated session", got, err)
		}
		if msgs, err := s.Transcript(ctx, "s-busy"); err != nil || len(msgs) != 1 {
			t.Fatalf("transcript after a renewing save = %v, %v; want one message", msgs, err)
		}
		advance(ttl)
		if _, err := s.Get(ctx, "s-busy"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("get a retention after the last write: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("no retention keeps sessions", func(t *testing.T) {
		t.Parallel()
		s, advance := opened(t, Retention{Sessions: 0, Events: ttl})
		ctx := testContext(t)
		if err := s.Create(ctx, newSession("s-kept", "ada", time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTranscript(ctx, "s-kept", []*modelv1.Message{TextMessage("kept")}); err != nil {
			t.Fatal(err)
		}
		advance(ttl + ttl/2)
		if _, err := s.Get(ctx, "s-kept"); err != nil {
			t.Fatalf("get with no retention: %v", err)
		}
		if msgs, err := s.Transcript(ctx, "s-kept"); err != nil || len(msgs) != 1 {
			t.Fatalf("transcript with no retention = %v, %v; want one message", msgs, err)
		}
	})
	t.Run("an event log goes after the retention from its last event", func(t *testing.T) {
		t.Parallel()
		s, advance := opened(t, Retention{Sessions: 0, Events: ttl})
		ctx := testContext(t)
		if err := s.Append(ctx, "run-brief", chunk("run-brief", 1, "a")); err != nil {
			t.Fatal(err)
		}
		advance(ttl * 3 / 5)
		if err := s.Append(ctx, "run-brief", chunk("run-brief", 2, "b")); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, "run-brief"); err != nil {
			t.Fatal(err)
		}
		advance(ttl * 3 / 5)
		// Past the retention since the first event, within it since the last.
		if seqs, err := collect(ctx, s, "run-brief", 0); err != nil || len(seqs) != 2 {
			t.Fatalf("replay within the retention of the last event = %v, %v; want seqs 1 and 2", seqs, err)
		}
		advance(ttl)
		if _, err := collect(ctx, s, "run-brief", 0); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("follow after the retention: err = %v, want ErrNotFound", err)
		}
		if seq, finished, err := s.LastSeq(ctx, "run-brief"); err != nil || seq != 0 || finished {
			t.Fatalf("LastSeq after the retention = %d, %v, %v; want 0, false, nil", seq, finished, err)
		}
	})
}

// TextMessage is a user message of text.
func TextMessage(text string) *modelv1.Message {
	return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: text}}}}}
}

// Clock is a clock the test moves, for stores that take their time from a
// function. It stands still between moves.
type Clock struct {
	mu sync.Mutex
	at time.Time
}

// NewClock returns a clock at the present.
func NewClock() *Clock { return &Clock{at: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}
