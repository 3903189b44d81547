package orchestrator

// This file offers a pending call to the host (as a preview or for real) and tells followers about it.

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
)

// preview sends the automation to run as a preview under its own call id:
// the host runs it in its transaction, reports and renders the effect, and
// rolls it back, so the person can review the effect before it is kept.
func (r *runner) preview(ctx context.Context, p *orchestratorv1.PendingCall) error {
	p.Previews++
	// A new preview needs a new decision: an approval of the last one no
	// longer describes what would happen.
	p.Reviewer, p.ReviewTime, p.Edited = "", nil, false
	call := proto.Clone(p.GetCommitCall()).(*agentv1.ToolCall)
	call.ToolCallId = fmt.Sprintf("%s.preview%d", p.GetCommitCall().GetToolCallId(), p.GetPreviews())
	call.Review = agentv1.ReviewState_REVIEW_STATE_PREVIEW
	call.GetExecute().ToolCallId = r.hostCallID(call.GetToolCallId())
	call.GetExecute().Mode = hostv1.Mode_MODE_PREVIEW
	call.GetExecute().ExpectRevision = ""
	script := call.GetExecute().GetCode()
	attempt, err := r.audit(ctx, call, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, script, nil, false)
	if err != nil {
		return err
	}
	return r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_PREVIEW, attempt)
}

// offer makes call the one the run waits on: it opens the mailbox, marks the
// session's pending call, saves the run and streams the call, then suspends.
// attempt is the audit log's number for this sending (0 when it did not
// leave), kept for the outcome record.
// A call that awaits review gets no result token: its mailbox token is kept
// in the run state for ReviewToolCall alone.
func (r *runner) offer(ctx context.Context, p *orchestratorv1.PendingCall, call *agentv1.ToolCall, stage orchestratorv1.Stage, attempt int32) error {
	wait := r.s.cfg.ToolResultTimeout
	token := newToken()
	call.ResultToken, p.ReviewToken = token, ""
	if stage == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		wait = r.s.cfg.ReviewTimeout
		call.ResultToken, p.ReviewToken = "", token
	}
	// The mailbox opens before anyone can know the call, so no result can
	// arrive before it.
	if err := retry(ctx, func(ctx context.Context) error {
		return r.s.store.Expect(ctx, r.sessionID, call.GetToolCallId(), token, wait+mailboxGrace)
	}); err != nil {
		return r.stateErr(ctx, "open mailbox", err)
	}
	// The courier posts the result with this trace context, so the request
	// that carries it, on whichever replica, joins the run's trace.
	carrier := propagation.MapCarrier{}
	r.s.env.Tel.Propagator.Inject(ctx, carrier)
	call.Traceparent = carrier.Get("traceparent")
	if err := r.bindHost(ctx, call); err != nil {
		return err
	}
	shown := proto.Clone(call).(*agentv1.ToolCall)
	shown.ResultToken = ""
	if _, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
			x.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: call.GetToolCallId(), ToolName: toolNameOf(call), RunId: r.runID,
				DispatchTime: timestamppb.New(r.s.now()), Review: call.GetReview(), ToolCall: shown}
			return nil
		})
	}); err != nil {
		return r.stateErr(ctx, "record pending call", err)
	}
	p.ToolCall, p.Stage, p.Emitted, p.Attempt = call, stage, false, attempt
	p.Deadline = timestamppb.New(r.s.now().Add(wait))
	r.rs.Pending = p
	if err := r.saveRun(ctx); err != nil {
		return err
	}
	if err := r.sendCall(ctx); err != nil {
		return err
	}
	r.log.Info("tool call offered", "tool_call", call.GetToolCallId(), "tool", call.GetToolName().String(), "review", call.GetReview().String())
	r.s.metrics.suspended(ctx)
	r.suspendFor = wait
	return errSuspended
}

// pendingUse is the id of the model's tool call a pending call answers; a
// preview's own id differs from it.
func pendingUse(p *orchestratorv1.PendingCall) string {
	if c := p.GetCommitCall(); c != nil {
		return c.GetToolCallId()
	}
	return p.GetToolCall().GetToolCallId()
}

// waitStart is when the pending call's current wait began.
func (r *runner) waitStart(p *orchestratorv1.PendingCall) time.Time {
	wait := r.s.cfg.ToolResultTimeout
	if p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		wait = r.s.cfg.ReviewTimeout
	}
	return p.GetDeadline().AsTime().Add(-wait)
}

// toolNameOf is the model's name of a call's tool.
func toolNameOf(c *agentv1.ToolCall) string {
	switch c.GetToolName() {
	case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
		return toolDataCollection
	case agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION:
		return toolTaskAutomation
	case agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW:
		return toolCaptureView
	}
	return ""
}

// sendCall streams the pending call to the courier and records that it did;
// a replica that stopped in between sends the same call (same id and token)
// again, so a courier may see it twice but never under a new id.
//
// A call for a linked host is in the host's delivery log before anyone
// hears of it, so the host gets it whether or not anybody follows the run.
func (r *runner) sendCall(ctx context.Context) error {
	p := r.rs.GetPending()
	if err := r.routeToHost(ctx); err != nil {
		return err
	}
	if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: p.GetToolCall()}}); err != nil {
		return err
	}
	if err := r.hostWaiting(ctx); err != nil {
		return err
	}
	p.Emitted = true
	return r.saveRun(ctx)
}
