package redisstate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// keysUnder lists every key under prefix on the store's server.
func keysUnder(t *testing.T, s *redisstate.Store, prefix string) []string {
	t.Helper()
	keys, err := s.Client().Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// fillSession writes every kind of key a session has: state, transcript,
// owner index, mailbox, and two runs' event logs and cancel signals.
func fillSession(t *testing.T, s state.Store, id string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Create(ctx, &agentv1.Session{SessionId: id, Owner: "ada", HostApp: "freecad", CreateTime: timestamppb.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, id, func(x *agentv1.Session) error { x.LastRunId = id + "-r2"; return nil }); err != nil {
		t.Fatal(err)
	}
	msgs := []*modelv1.Message{{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: "hi"}}}}}}
	if err := s.SaveTranscript(ctx, id, msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.Expect(ctx, id, "call-1", "token", time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{id + "-r1", id + "-r2"} {
		if err := s.Append(ctx, run, &agentv1.StreamChunk{Seq: 1, RunId: run, SessionId: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Cancel(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteLeavesNoKey deletes a session whose first run is named by the
// caller and whose last run is named by the session: no key is left.
func TestDeleteLeavesNoKey(t *testing.T) {
	url := statetest.RedisURL()
	prefix := statetest.Prefix(t, url)
	s := openTest(t, url, redisstate.Options{Prefix: prefix})
	defer s.Close()
	ctx := context.Background()
	fillSession(t, s, "gone")
	fillSession(t, s, "kept")
	if n := len(keysUnder(t, s, prefix)); n < 10 {
		t.Fatalf("want every kind of key written, got %d keys", n)
	}
	if err := s.Delete(ctx, "gone", "gone-r1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range keysUnder(t, s, prefix) {
		if strings.Contains(k, "gone") {
			t.Errorf("key %s of the deleted session is left", k)
		}
	}
	if members, _ := s.Client().ZRange(ctx, prefix+"owner:{ada}", 0, -1).Result(); len(members) != 1 || members[0] != "kept" {
		t.Errorf("want only the kept session in the owner index, got %v", members)
	}
	if _, err := s.Get(ctx, "kept"); err != nil {
		t.Fatalf("the other session must stay: %v", err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("deleting a missing session is not an error, got %v", err)
	}
}

// TestSessionRetention expires a session and its transcript after a short
// retention; the owner's list drops it.
func TestSessionRetention(t *testing.T) {
	url := statetest.RedisURL()
	prefix := statetest.Prefix(t, url)
	const ttl = 300 * time.Millisecond
	s := openTest(t, url, redisstate.Options{Prefix: prefix, SessionTTL: ttl, EventTTL: ttl, SignalTTL: ttl})
	defer s.Close()
	ctx := context.Background()
	fillSession(t, s, "old")
	if ms, err := s.Client().PTTL(ctx, prefix+"t:{old}").Result(); err != nil || ms <= 0 || ms > ttl {
		t.Fatalf("want the transcript to expire within %s, got %s %v", ttl, ms, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Get(ctx, "old")
		left := keysUnder(t, s, prefix)
		// The mailbox keeps its own (longer) lifetime, the one the run set.
		if errors.Is(err, state.ErrNotFound) && len(left) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hot state did not expire: %v, keys %v", err, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	list, err := s.List(ctx, "ada")
	if err != nil || len(list) != 0 {
		t.Fatalf("want the expired session dropped from the list, got %v %v", list, err)
	}
	if left := keysUnder(t, s, prefix); len(left) != 1 || !strings.Contains(left[0], "mb:{old}") {
		t.Fatalf("want only the mailbox (its own ttl) left, got %v", left)
	}
}
