package call

// This file takes up what came back for a suspended call and hands it to
// its stage: a preview's effect, a refusal, a review decision, a result.

import (
	"context"
	"errors"
	"fmt"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
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
		return r.s.Store.Follow(ctx, r.RunID, max(r.Seq-2, 0), state.EachChunk(func(c *agentv1.StreamChunk) error {
			if c.GetToolCall().GetToolCallId() == callID {
				found = true
			}
			if c.GetSeq() >= r.Seq {
				return errLogRead
			}
			return nil
		}))
	})
	switch {
	case errors.Is(err, errLogRead):
		return found, nil
	case err == nil:
		return false, nil // the log ended before r.Seq: nothing to find
	}
	return false, r.StateErr(ctx, "read the run's last chunks", err)
}

// deadlineSlack treats a run woken this close to its deadline as timed out,
// so a small difference between the store's clock and this replica's does
// not send it back to sleep for a moment.
const deadlineSlack = time.Second

// stage is what Collect found came for a call, before it takes it.
type stage int

const (
	// stageDecided: a result, none, or a cancel; the call is decided.
	stageDecided stage = iota
	// stageReviewed: a person's decision on the script.
	stageReviewed
	// stagePreviewed: the preview's effect, for the person to review.
	stagePreviewed
	// stageRefused: the host refused the approved script, the document
	// having changed since its preview.
	stageRefused
)

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
	if cancelled {
		r.Cancelling = true
		if !delivered && r.AwaitOutcome(ctx, p) {
			return nil, ErrSuspended
		}
	}
	left := p.GetDeadline().AsTime().Sub(r.s.Now())
	if !delivered && !cancelled && left > deadlineSlack {
		r.SuspendFor = left
		return nil, ErrSuspended
	}
	if !cancelled {
		// What came is taken once, here, with the outcome record its stage
		// puts in the same step; the stage then carries the call on.
		var next stage
		var tag string
		var body outcomeBody
		switch {
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW && delivered:
			next = stageReviewed
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW:
			r.s.Metrics.Resumed(ctx, u.GetName(), r.waitStart(p), false)
			return nil, &RunError{Code: agentv1.ErrorCode_ERROR_CODE_REVIEW_TIMEOUT, Message: fmt.Sprintf("nobody approved or declined the script of tool call %s within %s (NEXUS_REVIEW_TIMEOUT), so the run was ended; nothing ran", u.GetId(), r.s.Cfg.ReviewTimeout), Retryable: true}
		case p.GetStage() == orchestratorv1.Stage_STAGE_PREVIEW && delivered && d.Content.GetResult().GetPreviewed() && d.Content.GetResult().GetError() == nil:
			next, tag, body = stagePreviewed, "preview", outcomeBody{ToolName: tool.TaskAutomation, Scope: scopeAuditAndHistory}
		case p.GetCommitCall() != nil && p.GetPreviews() > 0 && delivered && d.Content.GetResult().GetError().GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED:
			// The document changed since the preview the person approved:
			// preview again, and ask again, before anything commits.
			// The refused sending keeps its own end in the audit log.
			next, tag, body = stageRefused, "refused", outcomeBody{ToolName: u.GetName(), Scope: scopeAuditOnly}
		}
		if next != stageDecided {
			var rec *state.OutboxRecord
			if tag != "" {
				x := r.outcomeRecord(p, tag, body)
				rec = &x
			}
			d, err := r.take(ctx, p, rec)
			if err != nil {
				return nil, err
			}
			switch next {
			case stagePreviewed:
				return nil, r.previewed(ctx, p, d)
			case stageRefused:
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
			// stageReviewed: the person's decision.
			return r.reviewed(ctx, u, p, d)
		}
	}
	if delivered {
		r.known = &d
	}
	res, err := r.Decide(ctx, u, p)
	if err == nil && cancelled {
		err = ErrCancelled
	}
	return res, err
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
