package runner

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
)

// TestTakeoverDoesNotStreamACallTwice: the worker before streamed the tool
// call as event 3 and lost the run (its lease lapsed in a store outage)
// before it recorded that it had. The replica that takes the run over
// finds the call in the log and does not stream it again: the courier
// sees it once (TestRunsOutliveTheirReplicasAndRedis once saw it twice).
// A call the log does not hold yet is streamed.
func TestTakeoverDoesNotStreamACallTwice(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name     string
		inLog    bool
		wantLast int64
	}{{"streamed before the takeover", true, 3}, {"not streamed yet", false, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			s := testDeps(memory.New(nil))
			const run, session = "run-takeover", "s-takeover"
			toolCall := &agentv1.ToolCall{ToolCallId: "toolu_1"}
			chunks := []*agentv1.StreamChunk{
				{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_RunStarted{RunStarted: &agentv1.RunStarted{}}}}},
				{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "I add a box."}}},
			}
			if tc.inLog {
				chunks = append(chunks, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: toolCall}})
			}
			for i, c := range chunks {
				c.Seq, c.RunId = int64(i+1), run
				if err := s.Store.Append(ctx, run, c); err != nil {
					t.Fatal(err)
				}
			}
			p := &orchestratorv1.PendingCall{ToolCall: toolCall, Deadline: timestamppb.New(time.Now().Add(time.Hour))}
			rs := &orchestratorv1.RunState{RunId: run, SessionId: session, Pending: p}
			r := newRunner(s, slog.New(slog.DiscardHandler), state.Lease{RunID: run, SessionID: session})
			r.RS, r.Seq = rs, int64(len(chunks))
			_, err := r.Collect(ctx, &modelv1.ToolUseBlock{Id: "toolu_1"}, p)
			if !errors.Is(err, call.ErrSuspended) {
				t.Fatalf("collect: %v, want the run suspended on its call", err)
			}
			last, _, err := s.Store.LastSeq(ctx, run)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			for seq := int64(0); seq < last; seq++ {
				_ = s.Store.Follow(ctx, run, seq, state.EachChunk(func(c *agentv1.StreamChunk) error {
					if c.GetToolCall() != nil {
						calls++
					}
					return errLogRead
				}))
			}
			saved, err := s.Store.GetRun(ctx, run)
			if err != nil {
				t.Fatal(err)
			}
			if last != tc.wantLast || calls != 1 || !saved.GetPending().GetEmitted() {
				t.Errorf("the log ends at %d with the call %d times, emitted recorded %v; want %d, once, true", last, calls, saved.GetPending().GetEmitted(), tc.wantLast)
			}
		})
	}
}
