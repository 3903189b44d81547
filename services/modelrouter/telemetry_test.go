package modelrouter_test

import (
	"fmt"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
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
			// The recorded stream (testdata/anthropic_text.sse) answers from
			// msg_01XFDUDYJgAACzvnptvVoYEL by claude-sonnet-4-5-20250929, with
			// 312 uncached input tokens, 3471 read from the cache and 410
			// written to it.
			u := turn.End.GetUsage()
			if u.GetInputTokens() != 312 || u.GetCacheReadTokens() != 3471 || u.GetCacheWriteTokens() != 410 {
				t.Fatalf("usage %v, want the recording's 312 + 3471 read + 410 written", u)
			}
			host, port, _ := net.SplitHostPort(strings.TrimPrefix(v.url, "http://"))
			want := map[string]string{
				// The model that answered, not the one asked for.
				"gen_ai.response.model":          "claude-sonnet-4-5-20250929",
				"gen_ai.response.id":             "msg_01XFDUDYJgAACzvnptvVoYEL",
				"gen_ai.response.finish_reasons": "stop",
				// Every input token, cached ones included.
				"gen_ai.usage.input_tokens":                "4193",
				"gen_ai.usage.cache_read.input_tokens":     "3471",
				"gen_ai.usage.cache_creation.input_tokens": "410",
				"gen_ai.usage.output_tokens":               itoa(u.GetOutputTokens()),
				"server.address":                           host,
				"server.port":                              port,
			}
			for k, w := range want {
				if ok.Attrs[k] != w {
					t.Errorf("successful call: %s = %q, want %q", k, ok.Attrs[k], w)
				}
			}
			if failed.Attrs["server.address"] != host {
				t.Errorf("failed call: server.address %q, want %q", failed.Attrs["server.address"], host)
			}
			for _, s := range spans {
				if _, ok := s.Attrs["gen_ai.system"]; ok {
					t.Errorf("span %q carries the deprecated gen_ai.system", s.Name)
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
			// Tokens are the conventions' histogram, one observation per
			// successful call and token type, labelled like the spans.
			labels := map[string]string{
				"gen_ai_operation_name": "chat", "gen_ai_provider_name": "anthropic", "gen_ai_request_model": "claude-haiku-4-5",
				"gen_ai_response_model": "claude-sonnet-4-5-20250929",
			}
			for _, m := range fams["gen_ai_client_token_usage"].GetMetric() {
				for _, l := range m.GetLabel() {
					if strings.HasPrefix(l.GetName(), "server_") {
						t.Errorf("gen_ai_client_token_usage carries %s: an address stays on the spans", l.GetName())
					}
				}
			}
			for typ, sum := range map[string]float64{"input": 4193, "output": float64(u.GetOutputTokens())} {
				l := maps.Clone(labels)
				l["gen_ai_token_type"] = typ
				if n, s := histogram(t, fams, "gen_ai_client_token_usage", l); n != 1 || s != sum {
					t.Errorf("gen_ai_client_token_usage{%s}: count %d sum %v, want 1 and %v", typ, n, s, sum)
				}
			}
		})
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

// histogram is the count and sum of the histogram name with labels.
func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if match && m.GetHistogram() != nil {
			return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
	}
	return 0, 0
}
