package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
)

// TestDelete removes the session, its transcript and mailbox and the event
// logs of its runs, and nothing of another session.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	for _, id := range []string{"gone", "kept"} {
		if err := s.Create(ctx, &agentv1.Session{SessionId: id, Owner: "ada", LastRunId: id + "-r2"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Expect(ctx, id, "call", "token", time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{id + "-r1", id + "-r2"} {
			if err := s.Append(ctx, run, &agentv1.StreamChunk{Seq: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Delete(ctx, "gone", "gone-r1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"session", func() error { _, err := s.Get(ctx, "gone"); return err }(), state.ErrNotFound},
		{"transcript", func() error { _, err := s.Transcript(ctx, "gone"); return err }(), state.ErrNotFound},
		{"mailbox", s.Deliver(ctx, "gone", "call", "token", state.Delivery{}), state.ErrNoPendingCall},
		{"first run's log", s.Follow(ctx, "gone-r1", 0, state.EachChunk(func(*agentv1.StreamChunk) error { return nil })), state.ErrNotFound},
		{"last run's log", s.Follow(ctx, "gone-r2", 0, state.EachChunk(func(*agentv1.StreamChunk) error { return nil })), state.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, tt.err)
			}
		})
	}
	if list, err := s.List(ctx, "ada"); err != nil || len(list) != 1 || list[0].GetSessionId() != "kept" {
		t.Fatalf("want only the kept session listed, got %v %v", list, err)
	}
}
