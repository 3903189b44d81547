package redisclient

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TraceHook makes a client span of each command or pipeline whose context
// carries a sampled span, so a trace shows the time a request spent in
// Redis round trips, waiting for a pooled connection included. A command of
// an unsampled request costs one check. scripts names the Lua scripts by
// their SHA1, so EVALSHA reads as the script it runs.
func TraceHook(tracer trace.Tracer, scripts map[string]string) redis.Hook {
	return traceHook{tracer: tracer, scripts: scripts}
}

type traceHook struct {
	tracer  trace.Tracer
	scripts map[string]string
}

func (traceHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h traceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return next(ctx, cmd)
		}
		ctx, span := h.tracer.Start(ctx, "redis "+h.describe(cmd), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis")))
		defer span.End()
		err := next(ctx, cmd)
		fail(span, err)
		return err
	}
}

func (h traceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return next(ctx, cmds)
		}
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = h.describe(cmd)
		}
		ctx, span := h.tracer.Start(ctx, "redis pipeline", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.StringSlice("db.redis.commands", names)))
		defer span.End()
		err := next(ctx, cmds)
		fail(span, err)
		return err
	}
}

func fail(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.SetStatus(codes.Error, err.Error())
	}
}

// describe names a command by its verb, the script's name for a script,
// and the shape of its first key with the id in its hash tag left out
// ("nexus:s:{}"); a key without a hash tag is left out, since its ids
// would make every name unique.
func (h traceHook) describe(cmd redis.Cmder) string {
	name := strings.ToUpper(cmd.Name())
	args := cmd.Args()
	first := 1
	if name == "EVALSHA" || name == "EVALSHA_RO" || name == "EVAL" {
		if sha, ok := arg(args, 1); ok {
			if script, ok := h.scripts[sha]; ok {
				name += " " + script
			}
		}
		first = 3
	}
	if key, ok := arg(args, first); ok {
		if open, end := strings.IndexByte(key, '{'), strings.IndexByte(key, '}'); open >= 0 && end > open {
			name += " " + key[:open+1] + key[end:]
		}
	}
	return name
}

func arg(args []any, i int) (string, bool) {
	if i >= len(args) {
		return "", false
	}
	s, ok := args[i].(string)
	return s, ok
}
