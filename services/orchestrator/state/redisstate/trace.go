package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"nexus.local/platform/telemetry"
)

// scriptNames names the store's Lua scripts by their SHA1, so a trace's
// EVALSHA says which script ran. A script left out here still shows, by
// its verb and key.
func (s *Store) scriptNames() map[string]string {
	out := map[string]string{}
	for name, sc := range map[string]*redis.Script{
		"acquire": s.scripts.acquire, "renew": s.scripts.renew, "suspend": s.scripts.suspend, "wake": s.scripts.wake,
		"claim": s.scripts.claim, "release": s.scripts.release, "due": s.scripts.due, "deliver": s.scripts.deliver,
		"decide": s.scripts.decide, "append": s.scripts.append, "finish": s.scripts.finish, "update": s.scripts.update,
		"wakeClaim": s.scripts.wakeClaim, "saveTranscript": s.scripts.saveTranscript,
		"decideRecord": s.outbox.decide, "putOutbox": s.outbox.put, "listOutbox": s.outbox.list, "doneOutbox": s.outbox.done,
		"unindex": s.outbox.unindex,
	} {
		out[sc.Hash()] = name
	}
	return out
}

// startSpan starts the span of one batched append when ctx's span is
// sampled; nil otherwise.
func (a *appender) startSpan(ctx context.Context) trace.Span {
	return telemetry.SampledSpan(ctx, a.tracer, "redis append, batched", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "redis")))
}

// endAppendSpan says when the append's batch left the queue and how many
// appends it held; an append whose caller stopped waiting is still the
// sender's to answer, so it is read only once answered.
func endAppendSpan(span trace.Span, r *appendReq) {
	defer span.End()
	select {
	case <-r.done:
	default:
		span.SetStatus(codes.Error, "the caller stopped waiting")
		return
	}
	span.AddEvent("batch sent", trace.WithTimestamp(r.sent), trace.WithAttributes(attribute.Int("batch", r.batch)))
	if r.err != nil {
		span.SetStatus(codes.Error, r.err.Error())
	}
}
