package sqlstore

// This file makes a span of each SQLite statement a sampled request runs,
// through the connections of the statement cache, so a trace
// shows the time a request spent in the database, a writer's wait for the
// write lock included. The span is made by the tracer provider of the span
// in the request's context, so it carries the service that asked. A
// statement of an unsampled request costs one check.

import (
	"context"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// sampled says whether a statement of ctx is traced: when the database
// traces statements and ctx's span is sampled.
func sampled(ctx context.Context, on *atomic.Bool) bool {
	return on != nil && on.Load() && trace.SpanContextFromContext(ctx).IsSampled()
}

// TraceStatements makes a span of each SQLite statement a sampled request
// runs from now on. A process turns it on when its spans leave it: spans
// kept in the process would cost every request their making.
func (d *DB) TraceStatements() { d.traced.Store(true) }

// traced runs f under a span named for query.
func traced[T any](ctx context.Context, query string, f func(context.Context) (T, error)) (T, error) {
	parent := trace.SpanFromContext(ctx)
	ctx, span := parent.TracerProvider().Tracer("nexus.local/platform/sqlstore").Start(ctx, "sqlite "+statementName(query),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("db.system.name", "sqlite")))
	defer span.End()
	v, err := f(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return v, err
}

// statementName is a statement's verb and the table it names first
// ("INSERT runs", "SELECT audit"), never its values.
func statementName(query string) string {
	words := strings.Fields(query)
	if len(words) == 0 {
		return "statement"
	}
	verb := strings.ToUpper(words[0])
	for i, w := range words[:len(words)-1] {
		switch strings.ToUpper(w) {
		case "INTO", "FROM", "UPDATE":
			return verb + " " + strings.Trim(words[i+1], `"(`)
		}
	}
	return verb
}
