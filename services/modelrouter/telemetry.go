package modelrouter

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
	"nexus.local/platform/telemetry"
)

// GenAI semantic-convention attribute keys (OpenTelemetry gen_ai.*, the
// current conventions: gen_ai.provider.name replaces the deprecated
// gen_ai.system, which is not sent).
const (
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrProvider      = attribute.Key("gen_ai.provider.name")
	attrRequestModel  = attribute.Key("gen_ai.request.model")
	attrMaxTokens     = attribute.Key("gen_ai.request.max_tokens")
	attrResponseModel = attribute.Key("gen_ai.response.model")
	attrResponseID    = attribute.Key("gen_ai.response.id")
	attrTokenType     = attribute.Key("gen_ai.token.type")
	attrServerAddress = attribute.Key("server.address")
	attrServerPort    = attribute.Key("server.port")
	attrFinish        = attribute.Key("gen_ai.response.finish_reasons")
	attrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheRead     = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrCacheWrite    = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	attrConversation  = attribute.Key("gen_ai.conversation.id")
	attrErrorType     = attribute.Key("error.type")
)

// tokenBuckets are the conventions' advised boundaries of
// gen_ai.client.token.usage (a function: only constants may be global).
func tokenBuckets() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
}

// answerKey keys the answer of the vendor call a context belongs to.
type answerKey struct{}

// answer is what the vendor said of the call: where it was sent, the id of
// its response and the model that answered (which may name a dated version
// of the model asked for).
type answer struct {
	host  string
	port  int
	id    string
	model string
}

// noteAnswer records the response id and the answering model an adapter read
// from the vendor's stream; empty values keep what was noted before.
func noteAnswer(ctx context.Context, id, model string) {
	if a, ok := ctx.Value(answerKey{}).(*answer); ok {
		if id != "" {
			a.id = id
		}
		if model != "" {
			a.model = model
		}
	}
}

// noteServer records the vendor endpoint a call was sent to: with an
// OpenAI-compatible server it is what tells one server from another.
func noteServer(ctx context.Context, u *url.URL) {
	a, ok := ctx.Value(answerKey{}).(*answer)
	if !ok {
		return
	}
	a.host = u.Hostname()
	if p, err := strconv.Atoi(u.Port()); err == nil {
		a.port = p
	} else if u.Scheme == "https" {
		a.port = 443
	} else {
		a.port = 80
	}
}

// serverAttrs are server.address and server.port once known.
func (a *answer) serverAttrs() []attribute.KeyValue {
	if a.host == "" {
		return nil
	}
	return []attribute.KeyValue{attrServerAddress.String(a.host), attrServerPort.Int(a.port)}
}

// providerName is the gen_ai.provider.name of a vendor, in the convention's
// well-known values where there is one.
func providerName(vendor string) string {
	switch vendor {
	case VendorGemini:
		return "gcp.gemini"
	case VendorCompat:
		return "openai"
	}
	return vendor
}

// vendorTelemetry makes a span per vendor call and counts retries and failures.
type vendorTelemetry struct {
	tracer trace.Tracer
	// exporting says the process's spans leave it, so a sampled vendor
	// request notes its steps (vendortrace.go).
	exporting bool
	now       func() time.Time
	duration  metric.Float64Histogram
	tokens    metric.Int64Histogram
	retries   metric.Int64Counter
	errors    metric.Int64Counter
	// messages counts what the turns' streams send to the orchestrator.
	messages metric.Int64Counter
}

func newVendorTelemetry(tel *telemetry.Telemetry) (*vendorTelemetry, error) {
	m := tel.Meter(ServiceName)
	v := &vendorTelemetry{tracer: tel.Tracer(ServiceName), exporting: tel.Exporting(), now: time.Now}
	var err error
	if v.duration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of one vendor call (GenAI semantic conventions)."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		return nil, err
	}
	if v.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Input tokens (cached ones included) and output tokens of one vendor call, by gen_ai.token.type (GenAI semantic conventions)."),
		metric.WithExplicitBucketBoundaries(tokenBuckets()...)); err != nil {
		return nil, err
	}
	if v.retries, err = m.Int64Counter("nexus.vendor.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Vendor calls sent again after a retryable failure, by vendor and status.")); err != nil {
		return nil, err
	}
	if v.errors, err = m.Int64Counter("nexus.vendor.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Turns that failed at the vendor after any retries, by vendor and error code.")); err != nil {
		return nil, err
	}
	if v.messages, err = m.Int64Counter("nexus.turn.stream.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Messages sent on the turns' streams (StreamTurn) to the orchestrator.")); err != nil {
		return nil, err
	}
	return v, nil
}

// vendorCall is one attempt of a turn at its vendor.
type vendorCall struct {
	v       *vendorTelemetry
	span    trace.Span
	t       *turn
	started time.Time
	answer  answer
}

// start opens the span of one attempt: "chat {model}", kind client.
func (v *vendorTelemetry) start(ctx context.Context, t *turn, attempt int) (context.Context, *vendorCall) {
	ctx, span := v.tracer.Start(ctx, "chat "+t.entry.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attrOperation.String("chat"),
		attrProvider.String(providerName(t.entry.Vendor)),
		attrRequestModel.String(t.entry.Name),
		attrMaxTokens.Int(int(t.maxTokens)),
		attrConversation.String(t.sessionID),
		attribute.Int("nexus.attempt", attempt+1),
	))
	c := &vendorCall{v: v, span: span, t: t, started: v.now()}
	return context.WithValue(withVendorTrace(ctx, v.exporting), answerKey{}, &c.answer), c
}

// inputTokens is gen_ai.usage.input_tokens: every input token, the ones read
// from and written to the prompt cache included (Usage counts them apart).
func inputTokens(u *modelv1.Usage) int64 {
	return u.GetInputTokens() + u.GetCacheReadTokens() + u.GetCacheWriteTokens()
}

// ok ends the span of a call that returned a whole turn.
func (c *vendorCall) ok(ctx context.Context, end *modelv1.TurnEnd) {
	u := end.GetUsage()
	attrs := []attribute.KeyValue{
		attrFinish.StringSlice([]string{finishReason(end.GetStopReason())}),
		attrInputTokens.Int64(inputTokens(u)),
		attrOutputTokens.Int64(u.GetOutputTokens()),
		attrCacheRead.Int64(u.GetCacheReadTokens()),
		attrCacheWrite.Int64(u.GetCacheWriteTokens()),
	}
	if c.answer.model != "" {
		attrs = append(attrs, attrResponseModel.String(c.answer.model))
	}
	if c.answer.id != "" {
		attrs = append(attrs, attrResponseID.String(c.answer.id))
	}
	c.span.SetAttributes(append(attrs, c.answer.serverAttrs()...)...)
	c.span.End()
	c.record(ctx, "")
	common := c.metricAttrs()
	c.v.tokens.Record(ctx, inputTokens(u), metric.WithAttributes(append(common, attrTokenType.String("input"))...))
	c.v.tokens.Record(ctx, u.GetOutputTokens(), metric.WithAttributes(append(common, attrTokenType.String("output"))...))
}

// metricAttrs are the attributes both GenAI client metrics carry. The
// server's address and port stay on the spans: no metric carries an address.
func (c *vendorCall) metricAttrs() []attribute.KeyValue {
	attrs := []attribute.KeyValue{attrOperation.String("chat"), attrProvider.String(providerName(c.t.entry.Vendor)), attrRequestModel.String(c.t.entry.Name)}
	if c.answer.model != "" {
		attrs = append(attrs, attrResponseModel.String(c.answer.model))
	}
	return attrs
}

// failed ends the span of a call that failed; retry says it will be sent again.
func (c *vendorCall) failed(ctx context.Context, ve *vendorError, retry bool) {
	c.span.SetAttributes(append(c.answer.serverAttrs(), attrErrorType.String(enumname.Short(ve.Code)))...)
	c.span.SetStatus(codes.Error, ve.Error())
	c.span.End()
	c.record(ctx, enumname.Short(ve.Code))
	vendor := attribute.String("vendor", c.t.entry.Vendor)
	if retry {
		c.v.retries.Add(ctx, 1, metric.WithAttributes(vendor, attribute.String("status", retryStatus(ve))))
		return
	}
	c.v.errors.Add(ctx, 1, metric.WithAttributes(vendor, attribute.String("code", enumname.Short(ve.Code))))
}

// abandon ends the span of a call whose turn was cancelled or whose caller
// went away; it is neither a vendor failure nor a retry.
func (c *vendorCall) abandon(err error) {
	c.span.SetStatus(codes.Error, err.Error())
	c.span.End()
}

func (c *vendorCall) record(ctx context.Context, errType string) {
	attrs := c.metricAttrs()
	if errType != "" {
		attrs = append(attrs, attrErrorType.String(errType))
	}
	c.v.duration.Record(ctx, c.v.now().Sub(c.started).Seconds(), metric.WithAttributes(attrs...))
}

// retryStatus is the HTTP status of a failed call, or its code when the
// failure came inside the stream or before any response.
func retryStatus(ve *vendorError) string {
	if ve.Status != 0 {
		return strconv.Itoa(ve.Status)
	}
	return enumname.Short(ve.Code)
}

// finishReason names a stop reason as the GenAI conventions do.
func finishReason(r modelv1.StopReason) string {
	switch r {
	case modelv1.StopReason_STOP_REASON_MAX_TOKENS:
		return "length"
	case modelv1.StopReason_STOP_REASON_TOOL_USE:
		return "tool_calls"
	case modelv1.StopReason_STOP_REASON_REFUSAL:
		return "content_filter"
	}
	return "stop"
}
