package orchestrator

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// Review is state on the server: a call that waits for a person is a
// pending call at STAGE_AWAITING_REVIEW whose mailbox token (review_token)
// is never streamed. ReviewToolCall posts the decision into that mailbox, so
// a decision is taken exactly once by the same atomic step that takes host
// results, on whichever replica, and the run is woken like for a result.

// validPolicy refuses values outside the enum.
func validPolicy(p agentv1.ReviewPolicy) error {
	if _, ok := agentv1.ReviewPolicy_name[int32(p)]; !ok {
		return refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "review_policy %d is not one of REVIEW_POLICY_EVERY_SCRIPT, _AUTOMATIONS, _NONE or _PREVIEW", p)
	}
	return nil
}

// maxReviewedCode bounds a reviewer's edited script, like the model's own.
const maxReviewedCode = 1 << 20

// ReviewToolCall decides the script the session's active run waits on.
func (s *Service) ReviewToolCall(ctx context.Context, req *agentv1.ReviewToolCallRequest) (*agentv1.ReviewToolCallResponse, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetToolCallId() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "tool_call_id is required")
	case req.GetVerdict() != agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE && req.GetVerdict() != agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "verdict must be REVIEW_VERDICT_APPROVE or REVIEW_VERDICT_DECLINE")
	case req.GetCode() != "" && req.GetVerdict() != agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "code (an edited script) goes only with REVIEW_VERDICT_APPROVE")
	case len(req.GetCode()) > maxReviewedCode:
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, "code is %d bytes; an edited script may have at most %d", len(req.GetCode()), maxReviewedCode)
	case req.GetCode() != "" && strings.TrimSpace(req.GetCode()) == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "code is blank; leave it empty to run the script as shown")
	}
	// No host compiles a script with NUL in it, and a reason is text the
	// model reads: refused here, neither reaches one.
	if err := nulError("code", "a script", req.GetCode()); err != nil {
		return nil, err
	}
	if err := nulError("reason", "a reason", req.GetReason()); err != nil {
		return nil, err
	}
	p := sess.GetPendingToolCall()
	runID := p.GetRunId()
	if runID == "" {
		runID = sess.GetActiveRunId()
	}
	if runID == "" {
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL, "session %s has no active run waiting on tool call %s", req.GetSessionId(), req.GetToolCallId())
	}
	rs, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "read run %s: %v", runID, err)
	}
	pend := rs.GetPending()
	if resp, ok, err := approvedBefore(pend, req); ok {
		return resp, err
	}
	if pend.GetToolCall().GetToolCallId() != req.GetToolCallId() || pend.GetReviewToken() == "" {
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_NOT_AWAITING_REVIEW, "tool call %s of session %s is not awaiting review", req.GetToolCallId(), req.GetSessionId())
	}
	dec := &orchestratorv1.ReviewDecision{
		Verdict: req.GetVerdict(), Code: req.GetCode(), Reason: strings.TrimSpace(req.GetReason()),
		Reviewer: identity.FromIncoming(ctx), DecideTime: timestamppb.New(s.now()),
	}
	// A repeat of the decision already taken answers it again, so a client
	// that lost the answer can retry; any other decision is a conflict.
	if d, ok, err := s.store.Peek(ctx, req.GetSessionId(), req.GetToolCallId()); err == nil && ok {
		prev, isReview := call.AsReviewDecision(d.Content)
		if isReview && prev.GetVerdict() == dec.GetVerdict() && prev.GetCode() == dec.GetCode() {
			return reviewResponse(prev), nil
		}
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_ALREADY_DECIDED, "tool call %s was already decided otherwise; this decision was refused", req.GetToolCallId())
	}
	err = s.store.Deliver(ctx, req.GetSessionId(), req.GetToolCallId(), pend.GetReviewToken(), state.Delivery{
		ToolCallID: req.GetToolCallId(), Content: call.ReviewDelivery(dec),
	})
	switch {
	case err == nil:
	case errors.Is(err, state.ErrNoPendingCall), errors.Is(err, state.ErrBadToken), errors.Is(err, state.ErrConflict):
		// The run may have taken an approval and moved on since its state
		// was read above: it saves the approval before it replaces the
		// review's mailbox, so a second read tells a repeat from a refusal.
		if rs, err := s.store.GetRun(ctx, runID); err == nil {
			if resp, ok, err := approvedBefore(rs.GetPending(), req); ok {
				return resp, err
			}
		}
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_NOT_AWAITING_REVIEW, "tool call %s is no longer awaiting review (it was decided, cancelled or timed out)", req.GetToolCallId())
	default:
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "record the review of tool call %s: %v", req.GetToolCallId(), err)
	}
	s.wake(context.WithoutCancel(ctx), state.Lease{RunID: runID, SessionID: req.GetSessionId()}, req.GetToolCallId())
	return reviewResponse(dec), nil
}

// approvedBefore answers req from the run's pending call pend once the
// call was approved: the run carries the call on and its review mailbox is
// gone, but the run state still says who approved it, so a client that
// repeats the approval is answered again and any other decision refused.
// ok is false when pend holds no approval of the call.
func approvedBefore(pend *orchestratorv1.PendingCall, req *agentv1.ReviewToolCallRequest) (*agentv1.ReviewToolCallResponse, bool, error) {
	if pend.GetCommitCall().GetToolCallId() != req.GetToolCallId() || pend.GetReviewer() == "" {
		return nil, false, nil
	}
	if req.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE && pend.GetEdited() == call.Edits(req.GetCode(), pend.GetCommitCall()) {
		return &agentv1.ReviewToolCallResponse{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE, Reviewer: pend.GetReviewer(), DecideTime: pend.GetReviewTime()}, true, nil
	}
	return nil, true, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_ALREADY_DECIDED, "tool call %s was already approved by %s; this decision was refused", req.GetToolCallId(), pend.GetReviewer())
}

func reviewResponse(d *orchestratorv1.ReviewDecision) *agentv1.ReviewToolCallResponse {
	return &agentv1.ReviewToolCallResponse{Verdict: d.GetVerdict(), Reviewer: d.GetReviewer(), DecideTime: d.GetDecideTime()}
}

// UpdateSession changes a session's settings; today its review policy.
func (s *Service) UpdateSession(ctx context.Context, req *agentv1.UpdateSessionRequest) (*agentv1.Session, error) {
	if _, err := s.ownedSession(ctx, req.GetSessionId()); err != nil {
		return nil, err
	}
	if err := validPolicy(req.GetReviewPolicy()); err != nil {
		return nil, err
	}
	sess, err := s.store.Update(ctx, req.GetSessionId(), func(x *agentv1.Session) error {
		if req.GetReviewPolicy() != agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED {
			x.ReviewPolicy = req.GetReviewPolicy()
		}
		return nil
	})
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "update session %s: %v", req.GetSessionId(), err)
	}
	return sess, nil
}

// nulError refuses text with a NUL character in it, saying where.
func nulError(field, what, text string) error {
	i := strings.IndexByte(text, 0)
	if i < 0 {
		return nil
	}
	return refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "%s has a NUL character at byte offset %d (line %d); %s cannot hold NUL, remove it",
		field, i, strings.Count(text[:i], "\n")+1, what)
}

// A review decision and a courier's failure travel in the mailbox beside
// host results, as arms of one MailboxDelivery, so they are taken exactly
// once by the same atomic step.
