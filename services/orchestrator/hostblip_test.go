package orchestrator_test

import (
	"context"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestHostLookupWaitsOutABlip cuts the network to Redis for two seconds
// just as a run looks up the owner's linked hosts for its tool call (the
// session is bound to none yet): the run waits the outage out, as every
// other step of a durable run does, and completes. Before, it ended with
// ERROR_CODE_STATE_UNAVAILABLE "list linked hosts: ... connection refused".
func TestHostLookupWaitsOutABlip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) == 0 {
			return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_h", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.Text("Looked.")}}
	})
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error"}))
	sess := newSession(ctx, t, stack.Client)
	// The owner's host list is read under its owner key.
	blip := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("ho:{"), Fault: statetest.Drop, For: 2 * time.Second})
	resp, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := courier(ctx, stack.Client, sess.GetSessionId(), resp.GetRunId(), committed)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-blip.Fired():
	default:
		t.Fatal("the run never looked up the owner's hosts: the test cut nothing")
	}
	if msg := f.failure(); msg != "" {
		t.Fatalf("the run did not wait out the outage: %s", msg)
	}
}
