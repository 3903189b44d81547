package modelrouter_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/telemetry/telemetrytest"
	"nexus.local/services/modelrouter/routertest"
)

// TestVendorCallSpans shows a span per vendor call with the OpenTelemetry
// GenAI attributes, received over OTLP on loopback in both protocols, and
// the retry the first call caused counted by its status.
func TestVendorCallSpans(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			sink := telemetrytest.StartSink(t, protocol)
			v := newVendor(t, overloaded(nil), reply{file: "anthropic_text.sse"})
			env := map[string]string{"ANTHROPIC_BASE_URL": v.url, "ANTHROPIC_API_KEY": "k", "NEXUS_METRICS_ADDR": "127.0.0.1:0"}
			maps.Copy(env, sink.Env)
			r := start(t, env)
			turn, err := routertest.Collect(testCtx(t), r.Client, &modelv1.StreamTurnRequest{
				Model: "anthropic/claude-haiku-4-5", Messages: []*modelv1.Message{userText("Hello")}, MaxTokens: 1000, SessionId: "s_1",
			})
			if err != nil || turn.End == nil {
				t.Fatalf("turn: err %v, end %v, error %v", err, turn.End, turn.Error)
			}

			spans := sink.WaitSpans(t, 2, 30*time.Second, func(s telemetrytest.Span) bool { return s.Name == "chat claude-haiku-4-5" })
			if len(spans) != 2 {
				t.Fatalf("%d vendor spans, want 2 (one per call)", len(spans))
			}
			for _, s := range spans {
				if s.Service != "model-router" || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("span %q from %q kind %v, want a client span of model-router", s.Name, s.Service, s.Kind)
				}
			}
			failed, ok := spans[0], spans[1]
			if failed.Attrs["gen_ai.usage.output_tokens"] != "" {
				failed, ok = ok, failed
			}
			common := map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
				"gen_ai.request.model": "claude-haiku-4-5", "gen_ai.request.max_tokens": "1000", "gen_ai.conversation.id": "s_1",
			}
			for k, want := range common {
				for _, s := range spans {
					if s.Attrs[k] != want {
						t.Errorf("%s = %q, want %q", k, s.Attrs[k], want)
					}
				}
			}
			if failed.Attrs["error.type"] != "overloaded" || failed.Status != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("failed call: error.type %q status %v", failed.Attrs["error.type"], failed.Status)
			}
			u := turn.End.GetUsage()
			want := map[string]string{
				"gen_ai.response.model":          "claude-haiku-4-5",
				"gen_ai.response.finish_reasons": "stop",
				"gen_ai.usage.input_tokens":      itoa(u.GetInputTokens()),
				"gen_ai.usage.output_tokens":     itoa(u.GetOutputTokens()),
			}
			for k, w := range want {
				if ok.Attrs[k] != w {
					t.Errorf("successful call: %s = %q, want %q", k, ok.Attrs[k], w)
				}
			}
			if u.GetOutputTokens() == 0 {
				t.Error("the recorded turn reports no output tokens")
			}

			fams := telemetrytest.Scrape(t, r.MetricsAddr)
			if n := telemetrytest.Value(fams, "nexus_vendor_retries_total", map[string]string{"vendor": "anthropic", "status": "529"}); n != 1 {
				t.Errorf("nexus_vendor_retries_total{status=529} = %v, want 1", n)
			}
			if n := telemetrytest.Value(fams, "gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_request_model": "claude-haiku-4-5"}); n != 2 {
				t.Errorf("gen_ai_client_operation_duration_seconds count = %v, want 2", n)
			}
		})
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }
