package redisstate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestRoundTripsOfSampledRequestsAreTraced holds the store to a span per
// round trip of a request whose span is sampled, named by its command or
// script and the shape of its key, under the request's span; and to none
// for a request that is not sampled.
func TestRoundTripsOfSampledRequestsAreTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test", Tracer: tp.Tracer("test")})
	t.Cleanup(func() { _ = s.Close() })

	work := func(ctx context.Context, run string) {
		t.Helper()
		c := &agentv1.StreamChunk{Seq: 1, RunId: run, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "hello"}}}
		if err := s.Append(ctx, run, c); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LastSeq(ctx, run); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	work(t.Context(), "r_quiet")
	if got := rec.Ended(); len(got) > 0 {
		t.Fatalf("a request that is not sampled made %d spans, the first %q", len(got), got[0].Name())
	}

	ctx, root := tp.Tracer("test").Start(t.Context(), "request")
	work(ctx, "r_traced")
	root.End()
	var names []string
	for _, sp := range rec.Ended() {
		if sp.SpanContext().SpanID() == root.SpanContext().SpanID() {
			continue
		}
		names = append(names, sp.Name())
		if sp.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %q is not the request's child", sp.Name())
		}
	}
	for _, want := range []func(string) bool{
		func(n string) bool { return n == "redis append, batched" },
		func(n string) bool { return strings.HasPrefix(n, "redis XREVRANGE ") && strings.HasSuffix(n, "ev:{}") },
		func(n string) bool { return strings.HasPrefix(n, "redis EVALSHA finish ") },
	} {
		if !slices.ContainsFunc(names, want) {
			t.Errorf("the request's round trips are traced as %q, without one of them", names)
		}
	}
}
