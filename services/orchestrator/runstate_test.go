package orchestrator_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestUnreadableRunStateEndsTheRun damages a suspended run's saved state in
// Redis, then posts its result: the replica that takes the run up cannot
// read it, so the run ends with an error its followers see, and the session
// takes the next run, instead of the run being claimed and dropped forever.
func TestUnreadableRunStateEndsTheRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_r", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": statetest.RedisURL()}))
	opts, err := redis.ParseURL(statetest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult {
			got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, "nexus:run:{"+got.GetActiveRunId()+"}", "not a run state", 0).Err(); err != nil {
				t.Fatal(err)
			}
			return &hostv1.HostResult{Stdout: "1"}
		})
	if err != nil {
		t.Fatal(err)
	}
	last := chunks[len(chunks)-1].GetError()
	if last.GetCode() != agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE {
		t.Fatalf("the run ended with %v, want a state_unavailable error", chunks[len(chunks)-1])
	}
	got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
	if err != nil || got.GetActiveRunId() != "" {
		t.Fatalf("session after the run = %v (%v), want no active run", got, err)
	}
}
