package redisstate_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestFullStoreIsNamed fills a Redis server of the test's own to its
// maxmemory (eviction off): every kind of write the store makes (a plain
// command, a transaction, a script, a pipeline) is refused with
// state.ErrFull, which is also state.ErrUnavailable so runs wait rather than
// fail, says that the state store is full, and is counted for the operator.
// Once there is room again the same writes succeed.
func TestFullStoreIsNamed(t *testing.T) {
	srv := statetest.StartRedis(t, "everysec")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var refused atomic.Int64
	s := openTest(t, srv.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:", OnFull: func() { refused.Add(1) }})
	defer s.Close()
	if err := s.Create(ctx, &agentv1.Session{SessionId: "s1", Owner: "ada"}); err != nil {
		t.Fatal(err)
	}
	rdb := s.Client()
	// A limit just under what the server uses now: no write fits.
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var usedBytes string
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			usedBytes = v
		}
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatalf("set maxmemory below %s bytes used: %v", usedBytes, err)
	}
	writes := []struct {
		name string
		do   func() error
	}{
		{"create", func() error { return s.Create(ctx, &agentv1.Session{SessionId: "s2", Owner: "ada"}) }},
		{"update", func() error {
			_, err := s.Update(ctx, "s1", func(x *agentv1.Session) error { x.CurrentScript = "print(1)"; return nil })
			return err
		}},
		{"transaction", func() error { return s.Expect(ctx, "s1", "call-1", "token-1", time.Minute) }},
		{"script", func() error {
			return s.Acquire(ctx, state.Lease{RunID: "r1", SessionID: "s1", Owner: "a"}, time.Minute)
		}},
		{"event", func() error { return s.Append(ctx, "r1", &agentv1.StreamChunk{Seq: 1, RunId: "r1"}) }},
		{"run", func() error { return s.SaveRun(ctx, &orchestratorv1.RunState{RunId: "r1", SessionId: "s1"}) }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			before := refused.Load()
			err := w.do()
			switch {
			case !errors.Is(err, state.ErrFull):
				t.Fatalf("err = %v, want state.ErrFull", err)
			case !errors.Is(err, state.ErrUnavailable):
				t.Fatalf("err = %v is not state.ErrUnavailable, so a run would fail instead of waiting", err)
			case !strings.Contains(err.Error(), "state store is full") || !strings.Contains(err.Error(), "maxmemory"):
				t.Fatalf("err = %q, want it to say the state store is full and name maxmemory", err)
			case refused.Load() == before:
				t.Fatal("the refusal was not counted")
			}
		})
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if err := w.do(); err != nil {
			t.Errorf("%s once there is room: %v", w.name, err)
		}
	}
}

// TestEventAppendSurvivesALostAnswer appends through a proxy that lets the
// first append reach Redis and drops its answer, as a crash between Redis's
// reply and the client does: the retried append is success, the log holds
// the chunk once, and a different chunk at that seq is still refused.
func TestEventAppendSurvivesALostAnswer(t *testing.T) {
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := openTest(t, proxy.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:"})
	defer s.Close()
	// A first append loads the store's script into Redis, so the append
	// whose answer is lost is the one that runs it.
	if err := s.Append(ctx, "r0", &agentv1.StreamChunk{Seq: 1, RunId: "r0"}); err != nil {
		t.Fatal(err)
	}
	c := &agentv1.StreamChunk{Seq: 1, RunId: "r1", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "lost-answer-marker"}}}
	rule := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("lost-answer-marker"), Fault: statetest.LoseAnswer})
	// The client itself may retry on the broken connection; either way the
	// caller sees success or the store being away, never a refusal.
	if err := s.Append(ctx, "r1", c); err != nil && !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("append whose answer was lost: %v, want success or state.ErrUnavailable", err)
	}
	<-rule.Fired()
	if err := s.Append(ctx, "r1", c); err != nil {
		t.Fatalf("retried append: %v", err)
	}
	other := &agentv1.StreamChunk{Seq: 1, RunId: "r1", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "another"}}}
	if err := s.Append(ctx, "r1", other); !errors.Is(err, state.ErrEventConflict) {
		t.Fatalf("a different chunk at seq 1: %v, want state.ErrEventConflict", err)
	}
	n, err := s.Client().XLen(ctx, "nexus:ev:{r1}").Result()
	if err != nil || n != 1 {
		t.Fatalf("the log holds %d entries (%v), want 1", n, err)
	}
}

// TestCreateSurvivesALostAnswer creates a session through a proxy that lets
// Redis store it and drops the answer: the retried create finds its own
// session and succeeds, while an id used by another session is still
// refused.
func TestCreateSurvivesALostAnswer(t *testing.T) {
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := openTest(t, proxy.URL(), redisstate.Options{ReplicaID: "a", Prefix: "nexus:"})
	defer s.Close()
	sess := &agentv1.Session{SessionId: "s-lost", Owner: "ada", HostApp: "freecad"}
	rule := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("s:{s-lost}"), Fault: statetest.LoseAnswer})
	err := s.Create(ctx, sess)
	if errors.Is(err, state.ErrUnavailable) {
		err = s.Create(ctx, sess)
	}
	if err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	<-rule.Fired()
	if got, err := s.Get(ctx, "s-lost"); err != nil || got.GetOwner() != "ada" {
		t.Fatalf("get = %v, %v", got, err)
	}
	if err := s.Create(ctx, &agentv1.Session{SessionId: "s-lost", Owner: "mallory"}); err == nil {
		t.Fatal("another session under a used id was created")
	}
}
