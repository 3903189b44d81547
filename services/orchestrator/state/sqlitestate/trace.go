package sqlitestate

import (
	"context"

	"nexus.local/platform/telemetry"
)

// lockWrites takes the file's write lock, under which every write of the
// process goes one at a time; a sampled request's wait for it is a span
// ("sqlite write lock"), which the statements' own spans do not show.
func (s *Store) lockWrites(ctx context.Context) {
	span := telemetry.SampledSpan(ctx, s.opts.Tracer, "sqlite write lock")
	s.writer.Lock()
	if span != nil {
		span.End()
	}
}
