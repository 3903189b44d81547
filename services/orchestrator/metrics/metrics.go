// Package metrics is the orchestrator's domain metrics: how runs, turns and
// tool calls go.
package metrics

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
	"nexus.local/services/orchestrator/tool"
)

// Tool-call outcomes, the values of the outcome label of nexus.tool.calls.
const (
	outcomeCommitted  = "committed"
	outcomeRolledBack = "rolled_back"
	OutcomeDeclined   = "declined"
	OutcomeNoResult   = "no_result"
	outcomeOK         = "ok"
	outcomeFailed     = "failed"
)

// GenAI agent-span attributes (OpenTelemetry semantic conventions).
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrAgentName    = attribute.Key("gen_ai.agent.name")
	attrConversation = attribute.Key("gen_ai.conversation.id")
	attrToolName     = attribute.Key("gen_ai.tool.name")
	attrToolType     = attribute.Key("gen_ai.tool.type")
)

// agentName is the gen_ai.agent.name of a run's invoke_agent span.
const agentName = "nexus"

// AgentSpanName names the span of each stretch a replica carries a run.
const AgentSpanName = "invoke_agent " + agentName

// AgentSpanAttrs are the GenAI attributes of a run's invoke_agent span.
func AgentSpanAttrs(sessionID string) []attribute.KeyValue {
	return []attribute.KeyValue{attrOperation.String("invoke_agent"), attrAgentName.String(agentName), attrConversation.String(sessionID)}
}

// TraceTools makes Resumed record an execute_tool span with tracer.
func (m *Metrics) TraceTools(tracer trace.Tracer) { m.tracer = tracer }

// deliveredAtKey rides in a delivery's trace carrier: the time the result was
// posted, so the waiter can measure how long the mailbox took to wake it.
const deliveredAtKey = "nexus-delivered-at"

// secondsBuckets spans a fast token to a long host wait.
func secondsBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}

// Metrics are the orchestrator's domain metrics: how runs go. Each method is
// one line at its call site.
type Metrics struct {
	now func() time.Time
	// tracer starts the execute_tool span of each wait on a host.
	tracer        trace.Tracer
	runsStarted   metric.Int64Counter
	runsEnded     metric.Int64Counter
	turns         metric.Int64Counter
	ttft          metric.Float64Histogram
	turnTime      metric.Float64Histogram
	tokens        metric.Int64Counter
	cost          metric.Float64Counter
	toolCalls     metric.Int64Counter
	capsReached   metric.Int64Counter
	compactions   metric.Int64Counter
	suspendedRuns metric.Int64UpDownCounter
	toolWait      metric.Float64Histogram
	mailbox       metric.Float64Histogram
	stateFull     metric.Int64Counter
	// streamMessages and eventAppends count the messages of the run's hops
	// after the model router: to the gateway, and to the event log.
	streamMessages metric.Int64Counter
	eventAppends   metric.Int64Counter
}

// New registers the instruments on m. The OpenTelemetry SDK never
// fails to create an instrument with a valid name, so errors are joined into
// one for the constructor.
func New(m metric.Meter, now func() time.Time) (*Metrics, error) {
	x := &Metrics{now: now}
	var errs []error
	i64 := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	hist := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(secondsBuckets()...))
		errs = append(errs, err)
		return h
	}
	x.runsStarted = i64("nexus.runs.started", "{run}", "Runs started, by model.")
	x.runsEnded = i64("nexus.runs.ended", "{run}", "Runs ended, by outcome (completed, failed, cancelled) and error code.")
	x.turns = i64("nexus.model.turns", "{turn}", "Model turns streamed, by model.")
	x.ttft = hist("nexus.model.time_to_first_token", "Time from sending a turn to its first streamed event, by model.")
	x.turnTime = hist("nexus.model.turn.duration", "Duration of a model turn, by model.")
	x.tokens = i64("nexus.model.tokens", "{token}", "Tokens by model and type (input, output, cache_read, cache_write).")
	cost, err := m.Float64Counter("nexus.model.cost_usd", metric.WithDescription("Cost in US dollars by model, from the catalog's prices."))
	errs = append(errs, err)
	x.cost = cost
	x.toolCalls = i64("nexus.tool.calls", "{call}", "Tool calls by tool and outcome (committed, rolled_back, declined, no_result, ok, failed).")
	x.capsReached = i64("nexus.budget.caps_reached", "{cap}", "Automations refused because the fix or iteration budget was spent.")
	x.compactions = i64("nexus.compactions", "{compaction}", "Transcript compactions, by kind (local summary or vendor).")
	sus, err := m.Int64UpDownCounter("nexus.runs.suspended", metric.WithUnit("{run}"), metric.WithDescription("Runs waiting on a host's tool result now."))
	errs = append(errs, err)
	x.suspendedRuns = sus
	x.toolWait = hist("nexus.tool.result_wait", "How long a run waited for a host's tool result, by tool and outcome (result, no_result).")
	x.mailbox = hist("nexus.mailbox.delivery_latency", "Time from a tool result being posted to the waiting run receiving it.")
	x.streamMessages = i64("nexus.run.stream.messages", "{message}", "Messages sent to followers of runs (the Run and StreamRunEvents streams).")
	x.eventAppends = i64("nexus.events.appends", "{append}", "Appends to the runs' event logs in the state store.")
	x.stateFull = i64("nexus.state.full_refusals", "{command}", "Writes the state store refused because it is full (Redis at maxmemory, eviction off); runs wait until there is room.")
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Exported from the start, so an alert on its increase has a series to
	// watch before the first refusal.
	x.stateFull.Add(context.Background(), 0)
	return x, nil
}

// StreamMessage counts one message sent to a run's follower; a runner
// built without metrics (a unit test's) counts nothing.
func (m *Metrics) StreamMessage(ctx context.Context) {
	if m != nil {
		m.streamMessages.Add(ctx, 1)
	}
}

// EventAppend counts one append to a run's event log.
func (m *Metrics) EventAppend(ctx context.Context) {
	if m != nil {
		m.eventAppends.Add(ctx, 1)
	}
}

// stateStoreFull counts one write the state store refused for want of memory.
func (m *Metrics) StateStoreFull() {
	m.stateFull.Add(context.Background(), 1)
}

func modelAttr(model string) attribute.KeyValue { return attribute.String("model", model) }

func (m *Metrics) RunStarted(ctx context.Context, model string) {
	m.runsStarted.Add(ctx, 1, metric.WithAttributes(modelAttr(model)))
}

// runEnded counts a run's end; failure is nil for a run that completed.
func (m *Metrics) RunEnded(ctx context.Context, model string, failure *agentv1.Error) {
	outcome, code := "completed", ""
	if failure != nil {
		outcome, code = "failed", ErrorCodeName(failure)
		if failure.GetCode() == agentv1.ErrorCode_ERROR_CODE_CANCELLED {
			outcome = "cancelled"
		}
	}
	m.runsEnded.Add(ctx, 1, metric.WithAttributes(modelAttr(model), attribute.String("outcome", outcome), attribute.String("error_code", code)))
}

// TurnMeter times one model turn.
type TurnMeter struct {
	m       *Metrics
	model   string
	started time.Time
	first   bool
}

// turnStarted counts a turn and starts its clock.
func (m *Metrics) TurnStarted(ctx context.Context, model string) *TurnMeter {
	m.turns.Add(ctx, 1, metric.WithAttributes(modelAttr(model)))
	return &TurnMeter{m: m, model: model, started: m.now()}
}

// event records the time to the turn's first streamed event, once; an
// error is no token.
func (t *TurnMeter) Event(ctx context.Context, resp *modelv1.StreamTurnResponse) {
	if t.first || resp.GetError() != nil {
		return
	}
	t.first = true
	t.m.ttft.Record(ctx, t.m.now().Sub(t.started).Seconds(), metric.WithAttributes(modelAttr(t.model)))
}

// ended records the turn's duration, tokens and cost.
func (t *TurnMeter) Ended(ctx context.Context, u *modelv1.Usage) {
	at := metric.WithAttributes(modelAttr(t.model))
	t.m.turnTime.Record(ctx, t.m.now().Sub(t.started).Seconds(), at)
	t.m.Usage(ctx, t.model, u)
}

// usage counts a turn's tokens and cost, summary turns included.
func (m *Metrics) Usage(ctx context.Context, model string, u *modelv1.Usage) {
	for _, k := range []struct {
		typ string
		n   int64
	}{
		{"input", u.GetInputTokens()}, {"output", u.GetOutputTokens()},
		{"cache_read", u.GetCacheReadTokens()}, {"cache_write", u.GetCacheWriteTokens()},
	} {
		m.tokens.Add(ctx, k.n, metric.WithAttributes(modelAttr(model), attribute.String("type", k.typ)))
	}
	m.cost.Add(ctx, u.GetCostUsd(), metric.WithAttributes(modelAttr(model)))
}

func (m *Metrics) ToolCall(ctx context.Context, tool, outcome string) {
	m.toolCalls.Add(ctx, 1, metric.WithAttributes(attribute.String("tool", toolLabel(tool)), attribute.String("outcome", outcome)))
}

// toolLabel keeps the tool label to the tools there are: a model may call a
// tool by any name, and each name would be a new series.
func toolLabel(name string) string {
	switch name {
	case tool.DataCollection, tool.TaskAutomation, tool.CaptureView:
		return name
	}
	return "unknown"
}

// ResultOutcome names what a host result says happened.
func ResultOutcome(toolName string, hr *hostv1.HostResult) string {
	switch {
	case toolName == tool.TaskAutomation && hr.GetCommitted():
		return outcomeCommitted
	case toolName == tool.TaskAutomation:
		return outcomeRolledBack
	case hr.GetError() != nil:
		return outcomeFailed
	}
	return outcomeOK
}

// capReached counts an automation refused by a spent budget.
func (m *Metrics) CapReached(ctx context.Context, fix bool) {
	budget := "iteration"
	if fix {
		budget = "fix"
	}
	m.capsReached.Add(ctx, 1, metric.WithAttributes(attribute.String("budget", budget)))
	m.ToolCall(ctx, tool.TaskAutomation, OutcomeDeclined)
}

func (m *Metrics) Compaction(ctx context.Context, kind string) {
	m.compactions.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind)))
}

// suspended counts a run that started waiting on its host. The run may be
// carried on by another replica, which counts it back with resumed, so the
// gauge is right summed over the replicas, not on one alone.
func (m *Metrics) Suspended(ctx context.Context) { m.suspendedRuns.Add(ctx, 1) }

// Resumed ends a wait that began at since and records how long it took,
// with an execute_tool span (GenAI agent conventions) from since to now: the
// tool ran on the host meanwhile, and the run may have been suspended, so
// the span is recorded when the wait ends, on the replica that ends it.
func (m *Metrics) Resumed(ctx context.Context, toolName string, since time.Time, gotResult bool) {
	m.suspendedRuns.Add(ctx, -1)
	outcome := "result"
	if !gotResult {
		outcome = OutcomeNoResult
	}
	if m.tracer != nil {
		_, span := m.tracer.Start(ctx, "execute_tool "+toolLabel(toolName), trace.WithTimestamp(since), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrOperation.String("execute_tool"), attrToolName.String(toolLabel(toolName)), attrToolType.String("function")))
		if !gotResult {
			span.SetAttributes(attribute.String("error.type", OutcomeNoResult))
			span.SetStatus(codes.Error, "no result from the host (timeout or cancel)")
		}
		span.End(trace.WithTimestamp(m.now()))
	}
	m.toolWait.Record(ctx, max(m.now().Sub(since).Seconds(), 0), metric.WithAttributes(attribute.String("tool", toolLabel(toolName)), attribute.String("outcome", outcome)))
}

// StampDelivered adds the posting time to a delivery's carrier.
func StampDelivered(carrier map[string]string, now time.Time) {
	carrier[deliveredAtKey] = strconv.FormatInt(now.UnixNano(), 10)
}

// mailboxDelivered records how long a posted result took to reach its run;
// a wait that ended without a result carries no stamp and records nothing.
func (m *Metrics) MailboxDelivered(ctx context.Context, carrier map[string]string) {
	ns, err := strconv.ParseInt(carrier[deliveredAtKey], 10, 64)
	if err != nil {
		return
	}
	m.mailbox.Record(ctx, max(m.now().Sub(time.Unix(0, ns)).Seconds(), 0))
}

// ErrorCodeName is the short name the run history and metrics keep for an
// error: the vendor's code for a vendor failure, else the enum's, e.g.
// "cancelled".
func ErrorCodeName(e *agentv1.Error) string {
	if e.GetVendorCode() != "" {
		return e.GetVendorCode()
	}
	return CodeName(e.GetCode())
}

// CodeName is an error code's short name, e.g. "host_unreachable".
func CodeName(c agentv1.ErrorCode) string { return enumname.Short(c) }
