package orchestrator_test

import (
	"bytes"
	"context"
	"maps"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/telemetry/telemetrytest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRunGenAISpans reads the spans of one run with one tool call, exported
// over OTLP by the orchestrator and the model-router, and checks each by the
// OpenTelemetry GenAI conventions: an invoke_agent span for the run, a chat
// client span per model turn under it, and an execute_tool span covering the
// host's work on the call, all in one trace. (The chat spans' token,
// response and server attributes, and the token histogram, are checked
// attribute by attribute in the model-router's TestVendorCallSpans.)
func TestRunGenAISpans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sink := telemetrytest.StartSink(t, "grpc")
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_01", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Count objects"})},
			InputTokens: 900, CacheReadTokens: 4000, OutputTokens: 40},
		ot.Turn{Blocks: []ot.Block{ot.Text("One object.")}},
	)
	env := baseEnv()
	maps.Copy(env, sink.Env)
	env["OTEL_BSP_SCHEDULE_DELAY"] = "50"
	stack := ot.Start(t, vendor.URL, env)
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "How many objects?"},
		func(*agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Stdout: "1\n"} })
	completed := false
	for _, c := range chunks {
		completed = completed || c.GetComplete() != nil
	}
	if err != nil || !completed {
		t.Fatalf("run: %v, completed %v", err, completed)
	}

	agents := sink.WaitSpans(t, 2, 30*time.Second, func(s telemetrytest.Span) bool { return s.Name == "invoke_agent nexus" })
	tools := sink.WaitSpans(t, 1, 30*time.Second, func(s telemetrytest.Span) bool { return s.Name == "execute_tool execute_data_collection" })
	chats := sink.WaitSpans(t, 2, 30*time.Second, func(s telemetrytest.Span) bool { return s.Name == "chat claude-sonnet-4-5" })
	// The run is carried in two stretches (before and after the host's
	// result), each its own invoke_agent span of the orchestrator.
	trace := agents[0].TraceID
	for _, s := range agents {
		if s.Service != "orchestrator" || s.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
			t.Errorf("invoke_agent from %q kind %v, want an internal span of the orchestrator", s.Service, s.Kind)
		}
		want := map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "nexus", "gen_ai.conversation.id": sess.GetSessionId()}
		for k, w := range want {
			if s.Attrs[k] != w {
				t.Errorf("invoke_agent %s = %q, want %q", k, s.Attrs[k], w)
			}
		}
		if _, ok := s.Attrs["gen_ai.system"]; ok {
			t.Error("invoke_agent carries the deprecated gen_ai.system")
		}
		if !bytes.Equal(s.TraceID, trace) {
			t.Error("the run's invoke_agent spans are in different traces")
		}
	}
	tool := tools[0]
	want := map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "execute_data_collection", "gen_ai.tool.type": "function"}
	for k, w := range want {
		if tool.Attrs[k] != w {
			t.Errorf("execute_tool %s = %q, want %q", k, tool.Attrs[k], w)
		}
	}
	if tool.Kind != tracepb.Span_SPAN_KIND_INTERNAL || tool.Status == tracepb.Status_STATUS_CODE_ERROR || !bytes.Equal(tool.TraceID, trace) {
		t.Errorf("execute_tool: kind %v status %v, in the run's trace %v", tool.Kind, tool.Status, bytes.Equal(tool.TraceID, trace))
	}
	// It covers the host's work: from the first turn's end, when the call
	// left, to the second turn's start, when the result came back.
	first, second := chats[0], chats[1]
	if first.Start > second.Start {
		first, second = second, first
	}
	if tool.Start < first.End || tool.End > second.Start || tool.End <= tool.Start {
		t.Errorf("execute_tool runs %d..%d, want it between the first turn's end %d and the second's start %d", tool.Start, tool.End, first.End, second.Start)
	}
	for _, c := range chats {
		if c.Service != "model-router" || !bytes.Equal(c.TraceID, trace) {
			t.Errorf("chat span from %q, in the run's trace %v", c.Service, bytes.Equal(c.TraceID, trace))
		}
		if c.Attrs["gen_ai.operation.name"] != "chat" || c.Attrs["gen_ai.provider.name"] != "anthropic" {
			t.Errorf("chat span attributes %v", c.Attrs)
		}
	}
	// Every input token, cached ones included: 900 + 4000.
	if first.Attrs["gen_ai.usage.input_tokens"] != "4900" {
		t.Errorf("first turn gen_ai.usage.input_tokens = %q, want 4900 (900 uncached + 4000 read from the cache)", first.Attrs["gen_ai.usage.input_tokens"])
	}
}
