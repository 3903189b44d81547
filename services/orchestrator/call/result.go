package call

// This file is what a decided call's result becomes: what the model is
// told and the chunk its followers get, and, for a result the resumed run
// read with its claim, the one round trip that decides it with what
// follows from it.

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

// resultOf is what the model is told of the host result hr of the call u,
// delivered as d, and the chunk that tells the followers.
func (r *Call) resultOf(ctx, cctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall, d state.Delivery, hr *hostv1.HostResult) (*modelv1.ToolResultBlock, *agentv1.StreamChunk) {
	callID := p.GetToolCall().GetToolCallId()
	r.Log.Info("tool result received", "tool_call", u.GetId(), "committed", hr.GetCommitted(), "failed", hr.GetError() != nil)
	r.s.Metrics.MailboxDelivered(cctx, d.Trace)
	r.s.Metrics.ToolCall(cctx, u.GetName(), metrics.ResultOutcome(u.GetName(), hr))
	if len(d.Trace) > 0 {
		// The request that carried the result is linked to the run's trace.
		rctx := r.s.Propagator.Extract(context.WithoutCancel(ctx), propagation.MapCarrier(d.Trace))
		if sc := trace.SpanContextFromContext(rctx); sc.IsValid() {
			trace.SpanFromContext(ctx).AddLink(trace.LinkFromContext(rctx))
		}
	}
	res := &modelv1.ToolResultBlock{
		ToolUseId: u.GetId(), Name: u.GetName(), IsError: hr.GetError() != nil,
		Text: renderResult(u.GetName(), hr, r.s.Cfg.MaxToolResultChars),
	}
	if notes := p.GetMergeNotes(); len(notes) > 0 {
		res.Text += "\n\nMerge notes (advisory; the merged script ran as it is):\n- " + strings.Join(notes, "\n- ")
	}
	if p.GetEdited() || p.GetReviewerScript() {
		res.Text += "\n\nThe person reviewing edited your script before approving it; what ran is their version, which edits now apply to."
	}
	if r.Cancelling {
		_, _, word := toolOutcome(p.GetKind(), d.Content, false)
		r.Ran = strings.ReplaceAll(word, "_", " ")
		res.Text += "\n\nThe person cancelled the run while this script was on the host; a cancel cannot unrun it, so this is what it did (" + r.Ran + "), and the run ended here."
	}
	for _, img := range hr.GetImages() {
		res.Images = append(res.Images, &modelv1.ImageBlock{MimeType: img.GetMimeType(), Data: img.GetData()})
	}
	return res, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
		ToolCallId: callID, ToolName: tool.NameEnum(u.GetName()), Result: hr,
	}}}}}
}

// decideKnown decides callID, whose host result d the run read with its
// claim and whose session it read as was, and writes what follows from it
// in the same round trip: the session's update and the chunk c. Under the
// run's lease nothing but this decision closes the call's mailbox, and a
// delivered result is never replaced, so the decision answers d. The
// session is updated from was only if it is still as read; otherwise the
// ordinary way, after.
func (r *Call) decideKnown(ctx context.Context, u *modelv1.ToolUseBlock, callID string, d state.Delivery, was *agentv1.Session, rec state.OutboxRecord, hr *hostv1.HostResult, c *agentv1.StreamChunk) error {
	now := proto.Clone(was).(*agentv1.Session)
	r.cleared(now, u, hr)
	decide := &state.DecideRecordStep{SessionID: r.SessionID, CallID: callID, Record: rec}
	swap := &state.SwapSessionStep{Was: was, Now: now}
	if err := r.w.EmitToWith(ctx, c, decide, swap); err != nil {
		return err
	}
	r.s.Outbox.kick(r.SessionID)
	if !decide.OK || !proto.Equal(decide.Delivery.Content, d.Content) {
		// Only a session deleted (or a mailbox expired) meanwhile gets
		// here; what the run read was delivered, and the model is told of it.
		r.Log.Warn("the decision did not answer the result the run read", "tool_call", callID, "decided", decide.OK)
	}
	r.Sess = now
	if swap.Swapped {
		return nil
	}
	return r.clearPending(ctx, u, hr)
}

// unroute takes the decided call out of its host's delivery log: at once,
// or, when the decision went in one round trip with the next turn's
// writes, beside the next turn. The clean-up is best effort either way
// (Unroute).
func (r *Call) unroute(ctx context.Context, tc *agentv1.ToolCall, beside bool) {
	route, sess := r.route(), r.Sess
	do := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
		defer cancel()
		route.Unroute(uctx, tc, sess)
	}
	if beside {
		go do()
		return
	}
	do()
}
