package orchestrator_test

import (
	"context"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// BenchmarkCancelLatency measures how long a run suspended on a tool call
// takes to end after CancelRun: the ms/cancel metric should stay well under
// a second.
func BenchmarkCancelLatency(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var turns []ot.Turn
	for range b.N {
		turns = append(turns, ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_wait", "execute_data_collection", map[string]any{"code": "wait()", "description": "Wait"})}})
	}
	vendor := ot.NewAnthropic(b, turns...)
	stack := ot.Start(b, vendor.URL, baseEnv())
	sess, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		stream, err := stack.Client.Run(ctx, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Wait"})
		if err != nil {
			b.Fatal(err)
		}
		var start time.Time
		for {
			c, err := stream.Recv()
			if err != nil {
				break
			}
			if c.GetToolCall() != nil {
				start = time.Now()
				if _, err := stack.Client.CancelRun(ctx, &agentv1.CancelRunRequest{SessionId: sess.GetSessionId()}); err != nil {
					b.Fatal(err)
				}
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/cancel")
}
