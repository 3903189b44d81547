package modelrouter

import (
	"context"
	"net/http/httptrace"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// withVendorTrace makes the vendor request of a sampled chat span note, as
// the span's events, each step of its way out: the connection asked for and
// got (reused or dialled), the request written, the first byte of the
// answer. A process does it only while its spans leave it (exporting).
func withVendorTrace(ctx context.Context, exporting bool) context.Context {
	span := trace.SpanFromContext(ctx)
	if !exporting || !span.SpanContext().IsSampled() {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { span.AddEvent("get conn") },
		GotConn: func(i httptrace.GotConnInfo) {
			span.AddEvent("got conn", trace.WithAttributes(attribute.Bool("reused", i.Reused)))
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { span.AddEvent("wrote request") },
		GotFirstResponseByte: func() { span.AddEvent("first response byte") },
	})
}

// noteVendorStep adds a step of a traced vendor request to its span.
func noteVendorStep(ctx context.Context, step string) {
	if httptrace.ContextClientTrace(ctx) != nil {
		trace.SpanFromContext(ctx).AddEvent(step)
	}
}
