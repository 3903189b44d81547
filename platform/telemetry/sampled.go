package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// SampledSpan starts a span named name under ctx's span when tracer is set
// and ctx's span is sampled, and returns nil otherwise: the spans of a
// store's inner steps are made for the requests a trace follows, and a
// request nobody follows pays one check.
func SampledSpan(ctx context.Context, tracer trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
	if tracer == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		return nil
	}
	_, span := tracer.Start(ctx, name, opts...)
	return span
}
