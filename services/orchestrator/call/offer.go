package call

// This file sends a pending call on its way: its dispatch under the review
// policy, its audit row, a preview, and the offer to the host that suspends
// the run.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

// preview sends the automation to run as a preview under its own call id:
// the host runs it in its transaction, reports and renders the effect, and
// rolls it back, so the person can review the effect before it is kept.
func (r *Call) preview(ctx context.Context, p *orchestratorv1.PendingCall) error {
	p.Previews++
	// A new preview needs a new decision: an approval of the last one no
	// longer describes what would happen.
	p.Reviewer, p.ReviewTime, p.Edited = "", nil, false
	call := proto.Clone(p.GetCommitCall()).(*agentv1.ToolCall)
	call.ToolCallId = fmt.Sprintf("%s%s%d", p.GetCommitCall().GetToolCallId(), previewMark, p.GetPreviews())
	call.Review = agentv1.ReviewState_REVIEW_STATE_PREVIEW
	call.GetExecute().ToolCallId = r.HostCallID(call.GetToolCallId())
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
func (r *Call) offer(ctx context.Context, p *orchestratorv1.PendingCall, call *agentv1.ToolCall, stage orchestratorv1.Stage, attempt int32) error {
	wait := r.s.Cfg.ToolResultTimeout
	token := state.NewToken()
	call.ResultToken, p.ReviewToken = token, ""
	if stage == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		wait = r.s.Cfg.ReviewTimeout
		call.ResultToken, p.ReviewToken = "", token
	}
	// The mailbox opens before anyone can know the call, so no result can
	// arrive before it.
	if err := state.Retry(ctx, func(ctx context.Context) error {
		return r.s.Store.Expect(ctx, r.SessionID, call.GetToolCallId(), token, wait+mailboxGrace)
	}); err != nil {
		return r.StateErr(ctx, "open mailbox", err)
	}
	// The courier posts the result with this trace context, so the request
	// that carries it, on whichever replica, joins the run's trace.
	carrier := propagation.MapCarrier{}
	r.s.Propagator.Inject(ctx, carrier)
	call.Traceparent = carrier.Get("traceparent")
	if err := r.route().Bind(ctx, call); err != nil {
		return err
	}
	shown := proto.Clone(call).(*agentv1.ToolCall)
	shown.ResultToken = ""
	if _, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error {
			x.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: call.GetToolCallId(), ToolName: tool.NameOf(call), RunId: r.RunID,
				DispatchTime: timestamppb.New(r.s.Now()), Review: call.GetReview(), ToolCall: shown}
			return nil
		})
	}); err != nil {
		return r.StateErr(ctx, "record pending call", err)
	}
	p.ToolCall, p.Stage, p.Emitted, p.Attempt = call, stage, false, attempt
	p.Deadline = timestamppb.New(r.s.Now().Add(wait))
	r.RS.Pending = p
	if err := r.w.SaveRun(ctx); err != nil {
		return err
	}
	if err := r.sendCall(ctx); err != nil {
		return err
	}
	r.Log.Info("tool call offered", "tool_call", call.GetToolCallId(), "tool", call.GetToolName().String(), "review", call.GetReview().String())
	r.s.Metrics.Suspended(ctx)
	r.SuspendFor = wait
	return ErrSuspended
}

// PendingUse is the id of the model's tool call a pending call answers; a
// preview's own id differs from it.
func PendingUse(p *orchestratorv1.PendingCall) string {
	if c := p.GetCommitCall(); c != nil {
		return c.GetToolCallId()
	}
	return p.GetToolCall().GetToolCallId()
}

// sendCall streams the pending call to the courier and records that it did;
// a replica that stopped in between sends the same call (same id and token)
// again, so a courier may see it twice but never under a new id.
//
// A call for a linked host is in the host's delivery log before anyone
// hears of it, so the host gets it whether or not anybody follows the run.
func (r *Call) sendCall(ctx context.Context) error {
	p := r.RS.GetPending()
	if err := r.route().Offer(ctx, p.GetToolCall()); err != nil {
		return err
	}
	if err := r.w.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: p.GetToolCall()}}); err != nil {
		return err
	}
	if err := r.route().Waiting(ctx, p.GetToolCall()); err != nil {
		return err
	}
	p.Emitted = true
	return r.w.SaveRun(ctx)
}

// mailboxGrace keeps a mailbox a little longer than the run waits on it, so
// a result that races the timeout is refused cleanly rather than lost.
const mailboxGrace = time.Minute

// Dispatch sends a tool call on its way and suspends the run until its
// result, a review decision, a cancel or the deadline wakes it, on whichever
// replica. Under the session's review policy the call first waits for a
// person (and, under the preview policy, first runs as a preview).
func (r *Call) Dispatch(ctx context.Context, u *modelv1.ToolUseBlock, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string) (*modelv1.ToolResultBlock, error) {
	sess, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.Store.Get(ctx, r.SessionID) })
	if err != nil {
		return nil, r.StateErr(ctx, "read session", err)
	}
	if sess.GetNewDocument() {
		newDocumentKey(tc, sess.GetSessionId())
	}
	policy := EffectivePolicy(sess.GetReviewPolicy())
	p := &orchestratorv1.PendingCall{Kind: kind, MergeNotes: tc.GetMergeNotes()}
	switch {
	case !needsReview(policy, u.GetName()):
		attempt, err := r.audit(ctx, tc, kind, script, nil, false)
		if err != nil {
			return nil, err
		}
		return nil, r.offer(ctx, p, tc, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED, attempt)
	case policy == agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW && u.GetName() == tool.TaskAutomation:
		p.CommitCall = tc
		return nil, r.preview(ctx, p)
	default:
		p.CommitCall = tc
		call := proto.Clone(tc).(*agentv1.ToolCall)
		call.Review = agentv1.ReviewState_REVIEW_STATE_AWAITING
		return nil, r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_AWAITING_REVIEW, 0)
	}
}

// audit records the exact bytes that leave for the host: the script and
// the epilogue, each with its hash, and who approved them when a person did.
// It returns the attempt the audit log gave this sending (0 when nothing
// was recorded), which the call's outcome names.
func (r *Call) audit(ctx context.Context, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string, review *orchestratorv1.ReviewDecision, edited bool) (int32, error) {
	if script == "" {
		return 0, nil
	}
	now := timestamppb.New(r.s.Now())
	callID := tc.GetToolCallId()
	entries := []*capabilityv1.Dispatch{{
		User: r.Owner, SessionId: r.SessionID, RunId: r.RunID, ToolCallId: callID, Kind: kind, DispatchTime: now,
		Stamp:    &capabilityv1.StampedScript{HostApp: r.HostApp, CapabilityVersion: r.Host.GetCapabilityVersion(), Code: script, ContentHash: sha256Hex(script)},
		Reviewer: review.GetReviewer(), ReviewTime: review.GetDecideTime(), Edited: edited,
	}}
	if ep := tc.GetExecute().GetEpilogue(); ep.GetCode() != "" {
		entries = append(entries, &capabilityv1.Dispatch{
			User: r.Owner, SessionId: r.SessionID, RunId: r.RunID, ToolCallId: callID, Kind: capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, DispatchTime: now,
			Stamp: &capabilityv1.StampedScript{HostApp: tc.GetEpilogueStamp().GetHostApp(), CapabilityVersion: tc.GetEpilogueStamp().GetCapabilityVersion(),
				Code: ep.GetCode(), ContentHash: ep.GetContentHash()},
		})
	}
	// The outcome of the call's last sending goes in before this one, so it
	// is recorded against the sending it ended.
	if err := r.s.Outbox.Flush(ctx, r.SessionID); err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		return 0, &RunError{Code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, Message: fmt.Sprintf("record the outcomes before the dispatch of tool call %s: %v", callID, err), Retryable: true}
	}
	resp, err := r.s.Capability.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: entries})
	if err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		return 0, &RunError{Code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, Message: fmt.Sprintf("record the dispatch of tool call %s in the audit log: %v", callID, status.Convert(err).Message()), Retryable: true}
	}
	return resp.GetAttempt(), nil
}

// newDocumentKey marks every host request of a session created with
// new_document with the session's id: the host opens a new, empty document
// the first time it sees the key and never again, so the mark is safe on
// every call (a call it never received, one it answered from its ledger,
// a runtime restarted on its checkpoint).
func newDocumentKey(tc *agentv1.ToolCall, sessionID string) {
	if e := tc.GetExecute(); e != nil {
		e.NewDocumentKey = sessionID
	}
	if v := tc.GetExportView(); v != nil {
		v.NewDocumentKey = sessionID
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// HostCallID is the id a host's ledger runs a call under. A model's tool call
// ids are unique only within its conversation (a scripted or replayed model
// numbers them from 1 in every session), while one host serves many sessions
// and answers a repeated id from its ledger without running it: the run's id
// makes the host's id unique to this run's call, and the same across the
// retries of it.
func (r *Call) HostCallID(toolCallID string) string {
	return r.RunID + "/" + toolCallID
}
