package reaper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/reaper"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

func openStore(t *testing.T) *redisstate.Store {
	t.Helper()
	url := statetest.RedisURL()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := redisstate.Open(ctx, url, redisstate.Options{Prefix: statetest.Prefix(t, url), ReplicaID: "test"})
	if err != nil {
		t.Fatalf("open redis store at %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// suspend puts a run of session sid in the state a replica leaves behind
// when it dies while waiting for a tool result: the session names the run
// and its pending call, the mailbox is open, the log has three chunks, and
// the lease (owned by the dead replica) runs out after ttl.
func suspend(t *testing.T, ctx context.Context, s state.Store, sid, run string, ttl time.Duration) {
	t.Helper()
	err := s.Create(ctx, &agentv1.Session{
		SessionId: sid, Owner: "ada", HostApp: "freecad", CreateTime: timestamppb.Now(),
		ActiveRunId: run, LastRunId: run,
		PendingToolCall: &agentv1.PendingToolCall{ToolCallId: "call-1", ToolName: "execute_task_automation", RunId: run},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Expect(ctx, sid, "call-1", "tok-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		c := &agentv1.StreamChunk{Seq: seq, RunId: run, SessionId: sid, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "working"}}}
		if err := s.Append(ctx, run, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Acquire(ctx, state.Lease{RunID: run, SessionID: sid, Owner: "replica-dead"}, ttl); err != nil {
		t.Fatal(err)
	}
}

func follow(t *testing.T, ctx context.Context, s state.Store, run string) []*agentv1.StreamChunk {
	t.Helper()
	var got []*agentv1.StreamChunk
	if err := s.Follow(ctx, run, 0, func(c *agentv1.StreamChunk) error { got = append(got, c); return nil }); err != nil {
		t.Fatalf("follow %s: %v", run, err)
	}
	return got
}

func TestSweepFailsDeadRuns(t *testing.T) {
	const lease = 15 * time.Second
	afterLease := func() time.Time { return time.Now().Add(2 * lease) }
	tests := []struct {
		name string
		// moveOn starts the session's next run before the reaper comes, as
		// the dead run's own cleanup would have done had it got that far.
		moveOn bool
	}{
		{name: "suspended run"},
		{name: "session already moved on", moveOn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s := openStore(t)
			suspend(t, ctx, s, "s1", "run-dead", lease)
			if err := s.Acquire(ctx, state.Lease{RunID: "run-alive", SessionID: "s2", Owner: "replica-alive"}, 100*lease); err != nil {
				t.Fatal(err)
			}
			if tt.moveOn {
				if _, err := s.Update(ctx, "s1", func(x *agentv1.Session) error {
					x.ActiveRunId = "run-next"
					x.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: "call-next", RunId: "run-next"}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := s.Expect(ctx, "s1", "call-next", "tok-next", time.Hour); err != nil {
					t.Fatal(err)
				}
			}

			if n, err := reaper.New(s, time.Second, nil, nil).Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("sweep before the lease ran out: failed %d runs (err %v), want 0", n, err)
			}
			r := reaper.New(s, time.Second, afterLease, nil)
			if n, err := r.Sweep(ctx); err != nil || n != 1 {
				t.Fatalf("sweep after the lease ran out: failed %d runs (err %v), want 1", n, err)
			}
			if n, err := r.Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("second sweep failed %d runs (err %v), want 0: each dead run is failed once", n, err)
			}

			chunks := follow(t, ctx, s, "run-dead")
			if len(chunks) != 4 {
				t.Fatalf("log has %d chunks, want the 3 written and the error", len(chunks))
			}
			last := chunks[3]
			if last.GetSeq() != 4 || last.GetError().GetCode() != reaper.ErrorCode || !last.GetError().GetRetryable() || last.GetSessionId() != "s1" {
				t.Fatalf("last chunk = %v, want a retryable %s error with seq 4", last, reaper.ErrorCode)
			}

			sess, err := s.Get(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			wantActive, wantCall := "", ""
			if tt.moveOn {
				wantActive, wantCall = "run-next", "call-next"
			}
			if sess.GetActiveRunId() != wantActive || sess.GetPendingToolCall().GetToolCallId() != wantCall {
				t.Fatalf("session: active %q, pending %q; want %q, %q", sess.GetActiveRunId(), sess.GetPendingToolCall().GetToolCallId(), wantActive, wantCall)
			}
			res := state.Delivery{Result: &hostv1.HostResult{Committed: true}}
			if tt.moveOn {
				if err := s.Deliver(ctx, "s1", "call-next", "tok-next", res); err != nil {
					t.Fatalf("the next run's mailbox was touched: %v", err)
				}
			} else if err := s.Deliver(ctx, "s1", "call-1", "tok-1", res); !errors.Is(err, state.ErrNoPendingCall) {
				t.Fatalf("deliver to the dead run: err = %v, want ErrNoPendingCall", err)
			}

			if err := s.Renew(ctx, state.Lease{RunID: "run-dead", SessionID: "s1", Owner: "replica-dead"}, lease); !errors.Is(err, state.ErrLeaseLost) {
				t.Fatalf("the dead replica renewed after the reap: err = %v, want ErrLeaseLost", err)
			}
			if err := s.Renew(ctx, state.Lease{RunID: "run-alive", SessionID: "s2", Owner: "replica-alive"}, lease); err != nil {
				t.Fatalf("a live run was reaped: %v", err)
			}
		})
	}
}

// TestRunEndsWithContext checks Run sweeps and stops with its context.
func TestRunEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := openStore(t)
	suspend(t, ctx, s, "s1", "run-dead", time.Millisecond)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- reaper.New(s, 10*time.Millisecond, nil, nil).Run(rctx) }()
	chunks := follow(t, ctx, s, "run-dead")
	if got := chunks[len(chunks)-1].GetError().GetCode(); got != reaper.ErrorCode {
		t.Fatalf("last chunk code %q, want %s", got, reaper.ErrorCode)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
