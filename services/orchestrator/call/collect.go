package call

// This file collects what came back for a pending call: a preview to review, a review decision, a result.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/enumname"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

// errLogRead stops reading the run's log once its last chunks were read.
const errLogRead = state.Error("read the run's last chunks")

// callStreamed says whether the run's log already ends with the tool call
// callID (or with its host_waiting notice right after it).
func (r *Call) callStreamed(ctx context.Context, callID string) (bool, error) {
	if r.Seq == 0 {
		return false, nil
	}
	found := false
	err := state.Retry(ctx, func(ctx context.Context) error {
		return r.s.Store.Follow(ctx, r.RunID, max(r.Seq-2, 0), func(c *agentv1.StreamChunk) error {
			if c.GetToolCall().GetToolCallId() == callID {
				found = true
			}
			if c.GetSeq() >= r.Seq {
				return errLogRead
			}
			return nil
		})
	})
	switch {
	case errors.Is(err, errLogRead):
		return found, nil
	case err == nil:
		return false, nil // the log ended before r.Seq: nothing to find
	}
	return false, r.StateErr(ctx, "read the run's last chunks", err)
}

// Collect takes up a suspended call: its result, a review decision, or none
// when the run was cancelled or the deadline passed. A run woken with
// neither (a refused result, say) goes back to waiting.
func (r *Call) Collect(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	if !p.GetEmitted() {
		streamed, err := r.callStreamed(ctx, p.GetToolCall().GetToolCallId())
		if err != nil {
			return nil, err
		}
		if streamed {
			// The worker before stopped (or lost its lease in a store
			// outage) after streaming the call and before recording it:
			// record it now, so the courier sees the call once.
			p.Emitted = true
			if err := r.w.SaveRun(ctx); err != nil {
				return nil, err
			}
		} else if err := r.sendCall(ctx); err != nil {
			return nil, err
		}
	}
	callID := p.GetToolCall().GetToolCallId()
	d, delivered, err := r.peek(ctx, callID)
	cancelled := errors.Is(context.Cause(ctx), ErrCancelled)
	select {
	case <-r.Cancelled:
		cancelled = true
	default:
	}
	switch {
	case err != nil && cancelled:
		// A cancel that cut the read short still decides the call, which
		// takes what came: the decision does not depend on this read.
		delivered = false
	case err != nil:
		return nil, r.StateErr(ctx, "read mailbox", err)
	}
	left := p.GetDeadline().AsTime().Sub(r.s.Now())
	if !delivered && !cancelled && left > deadlineSlack {
		r.SuspendFor = left
		return nil, ErrSuspended
	}
	if !cancelled {
		switch {
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW && delivered:
			return r.reviewed(ctx, u, p)
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW:
			r.s.Metrics.Resumed(ctx, u.GetName(), r.waitStart(p), false)
			return nil, &RunError{Code: agentv1.ErrorCode_ERROR_CODE_REVIEW_TIMEOUT, Message: fmt.Sprintf("nobody approved or declined the script of tool call %s within %s (NEXUS_REVIEW_TIMEOUT), so the run was ended; nothing ran", u.GetId(), r.s.Cfg.ReviewTimeout), Retryable: true}
		case p.GetStage() == orchestratorv1.Stage_STAGE_PREVIEW && delivered && d.Content.GetResult().GetPreviewed() && d.Content.GetResult().GetError() == nil:
			return nil, r.previewed(ctx, p)
		case p.GetCommitCall() != nil && p.GetPreviews() > 0 && delivered && d.Content.GetResult().GetError().GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED:
			// The document changed since the preview the person approved:
			// preview again, and ask again, before anything commits.
			// The refused sending keeps its own end in the audit log.
			rec := r.outcomeRecord(p, "refused", outcomeBody{ToolName: u.GetName(), Scope: scopeAuditOnly})
			if _, err := r.take(ctx, p, &rec); err != nil {
				return nil, err
			}
			r.Log.Info("document changed since the preview; previewing again", "tool_call", u.GetId())
			// The person approved one effect; they are told why they are
			// asked again rather than see a second preview unexplained.
			if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_Notice{Notice: &agentv1.Notice{
				Text: "Nothing ran: the document changed after the preview you approved (another change was made, or the host restarted on its last saved state), " +
					"so the script is previewed again on the document as it is now and waits for your decision.",
			}}}); err != nil {
				return nil, err
			}
			return nil, r.preview(ctx, p)
		}
	}
	res, err := r.Decide(ctx, u, p)
	if err == nil && cancelled {
		err = ErrCancelled
	}
	return res, err
}

// previewed shows the preview's effect beside the script and waits for the
// person's decision.
func (r *Call) previewed(ctx context.Context, p *orchestratorv1.PendingCall) error {
	rec := r.outcomeRecord(p, "preview", outcomeBody{ToolName: tool.TaskAutomation, Scope: scopeAuditAndHistory})
	d, err := r.take(ctx, p, &rec)
	if err != nil {
		return err
	}
	// Kept under the call the person reviews (the commit's id, which the
	// preview's own id extends), where the commit's model goes too.
	hr := r.keepModels(ctx, p.GetCommitCall().GetToolCallId(), d.Content.GetResult())
	if err := r.w.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
		ToolCallId: p.GetToolCall().GetToolCallId(), ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, Result: hr, Preview: true,
	}}}}}); err != nil {
		return err
	}
	call := proto.Clone(p.GetCommitCall()).(*agentv1.ToolCall)
	call.Review = agentv1.ReviewState_REVIEW_STATE_AWAITING
	call.Preview = hr
	return r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_AWAITING_REVIEW, 0)
}

// reviewed carries out a person's decision: a decline answers the model, an
// approval sends the script (as edited) to the courier.
func (r *Call) reviewed(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	d, err := r.take(ctx, p, nil)
	if err != nil {
		return nil, err
	}
	dec, ok := AsReviewDecision(d.Content)
	if !ok {
		return nil, &RunError{Code: agentv1.ErrorCode_ERROR_CODE_INTERNAL, Message: fmt.Sprintf("the review mailbox of tool call %s held something other than a decision", u.GetId()), Retryable: true}
	}
	edited := Edits(dec.GetCode(), p.GetCommitCall())
	if err := r.w.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ReviewDecided{ReviewDecided: &agentv1.ReviewDecided{
		ToolCallId: u.GetId(), Verdict: dec.GetVerdict(), Reviewer: dec.GetReviewer(), DecideTime: dec.GetDecideTime(), Edited: edited,
	}}}}}); err != nil {
		return nil, err
	}
	r.Log.Info("tool call reviewed", "tool_call", u.GetId(), "verdict", dec.GetVerdict().String(), "edited", edited)
	if dec.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
		// The audit log keeps the declined bytes too, with who declined
		// them, so a reader sees what was refused and by whom; its outcome
		// row says nothing ran.
		attempt, err := r.audit(ctx, p.GetCommitCall(), p.GetKind(), p.GetCommitCall().GetExecute().GetCode(), dec, false)
		if err != nil {
			return nil, err
		}
		hr := declinedResult(dec.GetReason())
		// The decline's outcome follows the audit row of the declined
		// bytes, so it is put only now, and names that row's attempt.
		rec := r.outcomeRecord(p, "end", outcomeBody{ToolCallID: u.GetId(), ToolName: u.GetName(), Scope: scopeAuditAndHistory, Attempt: attempt}.reviewed(dec))
		rec.Delivery = state.ResultDelivery(hr)
		if err := state.Retry(ctx, func(ctx context.Context) error { return r.s.Store.PutOutbox(ctx, rec) }); err != nil {
			return nil, r.StateErr(ctx, "record the declined call's outcome", err)
		}
		r.s.Outbox.kick(r.SessionID)
		r.s.Metrics.ToolCall(ctx, u.GetName(), metrics.OutcomeDeclined)
		if err := r.clearPending(ctx, u, nil); err != nil {
			return nil, err
		}
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: renderResult(u.GetName(), hr, r.s.Cfg.MaxToolResultChars)}, nil
	}
	if edited && u.GetName() == tool.TaskAutomation {
		// Line edits of the model's next script apply to what runs.
		if _, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
			return r.s.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error { x.CurrentScript = dec.GetCode(); return nil })
		}); err != nil {
			return nil, r.StateErr(ctx, "record the edited script", err)
		}
	}
	if edited && p.GetPreviews() > 0 {
		// The person approved the effect they saw, not that of their edit:
		// the edit runs as a preview of its own and waits for its own
		// decision before anything commits.
		p.GetCommitCall().GetExecute().Code = dec.GetCode()
		p.ReviewerScript = true
		r.Log.Info("edited script; previewing it before it commits", "tool_call", u.GetId())
		return nil, r.preview(ctx, p)
	}
	call := proto.Clone(p.GetCommitCall()).(*agentv1.ToolCall)
	call.Review, call.Reviewer = agentv1.ReviewState_REVIEW_STATE_APPROVED, dec.GetReviewer()
	if edited {
		call.GetExecute().Code = dec.GetCode()
	}
	if pr := p.GetToolCall().GetPreview(); pr != nil {
		call.GetExecute().ExpectRevision = pr.GetDocumentRevision()
	}
	p.Reviewer, p.ReviewTime, p.Edited = dec.GetReviewer(), dec.GetDecideTime(), edited
	attempt, err := r.audit(ctx, call, p.GetKind(), call.GetExecute().GetCode(), dec, edited || p.GetReviewerScript())
	if err != nil {
		return nil, err
	}
	// The approval is in the run state before the call's next mailbox
	// replaces the review's, so a client repeating the approval in between
	// is answered again rather than refused.
	if err := r.w.SaveRun(ctx); err != nil {
		return nil, err
	}
	return nil, r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED, attempt)
}

// declinedResult is what the model is told of a declined script.
func declinedResult(reason string) *hostv1.HostResult {
	msg := "the person reviewing declined to run this script; nothing ran and the document is unchanged"
	if reason != "" {
		msg += ". Their reason: " + reason
	}
	return &hostv1.HostResult{Error: &hostv1.ExecError{Type: enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_DECLINED), Condition: hostv1.ExecCondition_EXEC_CONDITION_DECLINED, Message: msg}}
}

// Peeked is a pending call's mailbox as read when its run was resumed.
type Peeked struct {
	callID string
	d      state.Delivery
	ok     bool
}

// NewPeeked is callID's mailbox as read: d, when ok.
func NewPeeked(callID string, d state.Delivery, ok bool) *Peeked {
	return &Peeked{callID: callID, d: d, ok: ok}
}

// peek reads callID's mailbox, or takes what the resumed run read of it. A
// result that came after that read is not lost: a run that suspends looks
// at the mailbox again once it has.
func (r *Call) peek(ctx context.Context, callID string) (state.Delivery, bool, error) {
	p := r.Peeked
	r.Peeked = nil
	if p != nil && p.callID == callID {
		return p.d, p.ok, nil
	}
	return state.RetryStore3(ctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.Store.Peek(ctx, r.SessionID, callID)
	})
}
