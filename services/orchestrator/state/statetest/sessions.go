package statetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state"
)

// Sessions: create, read, update atomically, list, delete; transcripts.

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
	// More messages than Lua unpacks at once (the Redis store pushes them in
	// parts), in order.
	long := make([]*modelv1.Message, 9000)
	for i := range long {
		long[i] = msg(fmt.Sprintf("message %d", i))
	}
	// A store may write only what changed since the last save: the next turn
	// adds to the end, and a compaction rewrites a message before it.
	grown := append(slices.Clone(long), msg("message 9000"))
	changed := slices.Clone(grown)
	changed[4500] = msg("message 4500, compacted")
	tests := []struct {
		name string
		save []*modelv1.Message
	}{
		{"empty", nil},
		{"three messages", []*modelv1.Message{msg("a"), msg("b"), msg("c")}},
		{"9,000 messages", long},
		{"grown by a message", grown},
		{"a message in the middle changed", changed},
		{"replaced by a shorter one", []*modelv1.Message{msg("z")}},
		{"emptied", nil},
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
