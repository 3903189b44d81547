package call

// This file holds a person's review of a pending call: which calls wait for
// one, the preview's effect shown for it, and the decision carried out.

import (
	"context"
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

// needsReview says whether a call of tool waits for a person under policy.
func needsReview(policy agentv1.ReviewPolicy, toolName string) bool {
	switch policy {
	case agentv1.ReviewPolicy_REVIEW_POLICY_NONE:
		return false
	case agentv1.ReviewPolicy_REVIEW_POLICY_EVERY_SCRIPT:
		return toolName == tool.DataCollection || toolName == tool.TaskAutomation
	}
	return toolName == tool.TaskAutomation
}

// EffectivePolicy is the policy a session gets when it names none: the
// preview, so the person decides on an effect they saw and never on a retry
// (a script that fails goes back to the model, since the rollback made it
// free).
func EffectivePolicy(p agentv1.ReviewPolicy) agentv1.ReviewPolicy {
	if p == agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED {
		return agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW
	}
	return p
}

// previewed shows the preview's effect, d, beside the script and waits for
// the person's decision.
func (r *Call) previewed(ctx context.Context, p *orchestratorv1.PendingCall, d state.Delivery) error {
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

// reviewed carries out a person's decision: an approval sends the script
// (as edited) to the courier, a decline answers the model.
func (r *Call) reviewed(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall, d state.Delivery) (*modelv1.ToolResultBlock, error) {
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
	if dec.GetVerdict() != agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
		return nil, r.approved(ctx, u, p, dec, edited)
	}
	// The audit log keeps the declined bytes too, with who declined them,
	// so a reader sees what was refused and by whom; its outcome row says
	// nothing ran.
	attempt, err := r.audit(ctx, p.GetCommitCall(), p.GetKind(), p.GetCommitCall().GetExecute().GetCode(), dec, false)
	if err != nil {
		return nil, err
	}
	hr := declinedResult(dec.GetReason())
	// The decline's outcome follows the audit row of the declined bytes, so
	// it is put only now, and names that row's attempt.
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

// approved sends the script the person approved, dec, on its way: as they
// edited it, and first as a preview of its own when the edit changed a
// previewed script.
func (r *Call) approved(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall, dec *orchestratorv1.ReviewDecision, edited bool) error {
	if edited && u.GetName() == tool.TaskAutomation {
		// Line edits of the model's next script apply to what runs.
		if _, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
			return r.s.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error { x.CurrentScript = dec.GetCode(); return nil })
		}); err != nil {
			return r.StateErr(ctx, "record the edited script", err)
		}
	}
	if edited && p.GetPreviews() > 0 {
		// The person approved the effect they saw, not that of their edit:
		// the edit runs as a preview of its own and waits for its own
		// decision before anything commits.
		p.GetCommitCall().GetExecute().Code = dec.GetCode()
		p.ReviewerScript = true
		r.Log.Info("edited script; previewing it before it commits", "tool_call", u.GetId())
		return r.preview(ctx, p)
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
		return err
	}
	// The approval is in the run state before the call's next mailbox
	// replaces the review's, so a client repeating the approval in between
	// is answered again rather than refused.
	if err := r.w.SaveRun(ctx); err != nil {
		return err
	}
	return r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED, attempt)
}

// declinedResult is what the model is told of a declined script.
func declinedResult(reason string) *hostv1.HostResult {
	msg := "the person reviewing declined to run this script; nothing ran and the document is unchanged"
	if reason != "" {
		msg += ". Their reason: " + reason
	}
	return &hostv1.HostResult{Error: &hostv1.ExecError{Type: enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_DECLINED), Condition: hostv1.ExecCondition_EXEC_CONDITION_DECLINED, Message: msg}}
}

// Edits says whether a reviewer's code changes the script of call; an empty
// code runs the script as shown.
func Edits(code string, call *agentv1.ToolCall) bool {
	return code != "" && code != call.GetExecute().GetCode()
}
