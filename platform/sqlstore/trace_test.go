package sqlstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"nexus.local/platform/sqlstore"
)

// TestStatementsOfSampledRequestsAreTraced holds a SQLite database that
// traces statements to a span per statement of a sampled request, named by
// its verb and table, under the request's span; and to none for a request
// that is not sampled, or before the database traces statements.
func TestStatementsOfSampledRequestsAreTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	db, err := sqlstore.Open(t.Context(), sqlstore.Config{DataDir: t.TempDir(), MaxConns: 2, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	start := func(ctx context.Context, id string) {
		t.Helper()
		if err := db.StartRun(ctx, sqlstore.Run{RunID: id, SessionID: "s1", Owner: "ada", HostApp: "freecad", StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	sampled, root := tp.Tracer("test").Start(t.Context(), "request")
	start(sampled, "r_before")
	db.TraceStatements()
	start(t.Context(), "r_quiet")
	if got := rec.Ended(); len(got) > 0 {
		t.Fatalf("%d spans before statements were traced or of an unsampled request, the first %q", len(got), got[0].Name())
	}
	start(sampled, "r_traced")
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
	if !slices.Contains(names, "sqlite INSERT runs") {
		t.Errorf("the request's statements are traced as %q, without sqlite INSERT runs", names)
	}
}
