package sqlitestate_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state/sqlitestate"
)

// TestWaitsOfSampledRequestsAreTraced holds the store to a span of a
// sampled request's wait for the write lock and of its batched append,
// under the request's span, and to none for a request that is not sampled.
func TestWaitsOfSampledRequestsAreTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{Tracer: tp.Tracer("test")})

	work := func(ctx context.Context, run string) {
		t.Helper()
		c := &agentv1.StreamChunk{Seq: 1, RunId: run, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "hello"}}}
		if err := s.Append(ctx, run, c); err != nil {
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
	for _, want := range []string{"sqlite append, batched", "sqlite write lock"} {
		if !slices.Contains(names, want) {
			t.Errorf("the request's waits are traced as %q, without %q", names, want)
		}
	}
}
