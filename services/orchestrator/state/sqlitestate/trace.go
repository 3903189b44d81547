package sqlitestate

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// lockWrites takes the file's write lock, under which every write of the
// process goes one at a time; a sampled request's wait for it is a span
// ("sqlite write lock"), which the statements' own spans do not show.
func (s *Store) lockWrites(ctx context.Context) {
	if s.opts.Tracer == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		s.writer.Lock()
		return
	}
	_, span := s.opts.Tracer.Start(ctx, "sqlite write lock")
	s.writer.Lock()
	span.End()
}

// appendSpan starts the span of a sampled request's append, its wait in
// the queue and for its batch's commit; nil otherwise.
func (s *Store) appendSpan(ctx context.Context) trace.Span {
	if s.opts.Tracer == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		return nil
	}
	_, span := s.opts.Tracer.Start(ctx, "sqlite append, batched")
	return span
}
