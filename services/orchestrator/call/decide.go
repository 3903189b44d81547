package call

// This file decides a pending call: closes its mailbox, takes its result or
// its absence with the outcome record of the step, and settles the session.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

// take closes the pending call's mailbox for good and answers what it held;
// rec, when set, is the outcome record put in the same step.
func (r *Call) take(ctx context.Context, p *orchestratorv1.PendingCall, rec *state.OutboxRecord) (state.Delivery, error) {
	since := r.waitStart(p)
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer ccancel()
	d, _, err := state.RetryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		if rec != nil {
			return r.s.Store.DecideRecord(ctx, r.SessionID, p.GetToolCall().GetToolCallId(), *rec)
		}
		return r.s.Store.Decide(ctx, r.SessionID, p.GetToolCall().GetToolCallId())
	})
	if err != nil {
		return d, r.StateErr(ctx, "decide tool call", err)
	}
	if rec != nil {
		r.s.Outbox.kick(r.SessionID)
	}
	r.route().Unroute(cctx, p.GetToolCall(), nil)
	r.s.Metrics.Resumed(cctx, tool.NameOf(p.GetToolCall()), since, true)
	return d, nil
}

// clearPending drops the session's pending call when it is this run's and,
// with a result, records what the session needs of it. The session as
// stored is kept for the next turn, which needs no read of its own then.
func (r *Call) clearPending(ctx context.Context, u *modelv1.ToolUseBlock, hr *hostv1.HostResult) error {
	sess, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error {
			r.cleared(x, u, hr)
			return nil
		})
	})
	if err != nil {
		return r.StateErr(ctx, "record tool result", err)
	}
	r.Sess = sess
	return nil
}

// cleared records in x that this run's call u was decided, with hr when
// it has a host result.
func (r *Call) cleared(x *agentv1.Session, u *modelv1.ToolUseBlock, hr *hostv1.HostResult) {
	if x.GetPendingToolCall().GetRunId() == r.RunID {
		x.PendingToolCall = nil
	}
	if hr != nil {
		x.LastCompletedTool = u.GetName()
		if u.GetName() == tool.TaskAutomation {
			x.LastTaskCommitted = hr.GetCommitted()
		}
	}
}

// Decide closes a pending call for good and returns what the model is told:
// the result, or that none came. A result that races the deadline or a
// cancel is either taken here or refused, never accepted and then dropped.
// A courier that could not deliver the call ends the run with its error.
func (r *Call) Decide(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	log := r.Log.With("tool_call", u.GetId())
	since := r.waitStart(p)
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer ccancel()
	callID := p.GetToolCall().GetToolCallId()
	// How the call ended is put in the outbox in the same step as the
	// decision, and written to the audit log and the history after it.
	rec := r.outcomeRecord(p, "end", outcomeBody{ToolName: u.GetName(), Scope: scopeAuditAndHistory, AwaitingReview: p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW})
	// A host result the resumed run read with its claim is decided in one
	// round trip with what follows from it (decideKnown).
	known, was := r.known, r.SessRead
	r.known, r.SessRead = nil, nil
	fast := known != nil && was != nil && known.Content.GetResult() != nil && p.GetStage() != orchestratorv1.Stage_STAGE_AWAITING_REVIEW && !r.Cancelling
	var d state.Delivery
	ok := fast
	if fast {
		d = *known
	} else {
		var err error
		d, ok, err = state.RetryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
			return r.s.Store.DecideRecord(ctx, r.SessionID, callID, rec)
		})
		if err != nil {
			return nil, r.StateErr(ctx, "decide tool call", err)
		}
		r.s.Outbox.kick(r.SessionID)
		// A review that never came, or a decision taken after the run gave
		// up, is no host result: the script never left.
		if _, isReview := AsReviewDecision(d.Content); isReview || p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
			ok = false
		}
	}
	var hr *hostv1.HostResult
	if ok {
		hr = d.Content.GetResult()
		if hr == nil {
			hr = &hostv1.HostResult{}
		}
		hr = r.keepModels(cctx, callID, hr)
	}
	f, failed := asCourierFailure(d.Content)
	var res *modelv1.ToolResultBlock
	var c *agentv1.StreamChunk
	switch {
	case !ok:
		res = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: noResultText(r.s.Cfg.ToolResultTimeout.String())}
		c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			ToolCallId: callID, ToolName: tool.NameEnum(u.GetName()), NoResult: true,
		}}}}}
	case failed:
		res = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: courierFailureText(f)}
	default:
		res, c = r.resultOf(ctx, cctx, u, p, d, hr)
	}
	if fast {
		if err := r.decideKnown(cctx, u, callID, d, was, rec, hr, c); err != nil {
			return nil, err
		}
	} else if err := r.clearPending(cctx, u, hr); err != nil {
		return nil, err
	}
	r.unroute(ctx, p.GetToolCall(), fast)
	r.s.Metrics.Resumed(cctx, u.GetName(), since, ok)
	switch {
	case !ok:
		r.LeftUnanswered = r.Cancelling && p.GetCancelAwaitsOutcome()
		log.Info("no tool result")
		r.s.Metrics.ToolCall(cctx, u.GetName(), metrics.OutcomeNoResult)
		return res, r.w.EmitTo(cctx, c)
	case failed:
		log.Info("courier could not deliver the call", "code", f.GetCode().String(), "message", f.GetMessage())
		return res, &RunError{Code: f.GetCode(), Message: courierFailureMessage(f), Retryable: true}
	case fast:
		return res, nil
	}
	return res, r.w.EmitTo(cctx, c)
}

// courierFailureMessage says what failed and what to do.
func courierFailureMessage(f *agentv1.CourierFailure) string {
	what := map[agentv1.ErrorCode]string{
		agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE:  "The host runtime could not be reached, so the script was not run. Start the runtime (nexus host freecad, or the add-in in your application), check its address, and run again.",
		agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED: "The host runtime refused the pairing token, so the script was not run. Pair again with the token the runtime prints, and run again.",
		agentv1.ErrorCode_ERROR_CODE_HOST_NOT_PAIRED:   "No host runtime is paired, so the script was not run. Pair a runtime (its URL and token), and run again.",
		agentv1.ErrorCode_ERROR_CODE_HOST_MISMATCH:     "The paired runtime serves another application than this session's, so the script was not run. Pair the runtime of the session's application, and run again.",
	}[f.GetCode()]
	if f.GetMessage() != "" {
		what += " The courier saw: " + f.GetMessage()
	}
	return what
}

// noResultText tells the model that nothing came back: timeout and cancel
// are one path.
func noResultText(timeout string) string {
	return "No result: the host did not answer within " + timeout + ", or the run was cancelled. " +
		"It is unknown whether the script ran; inspect the document before changing it again."
}

// waitStart is when the pending call's current wait began.
func (r *Call) waitStart(p *orchestratorv1.PendingCall) time.Time {
	wait := r.s.Cfg.ToolResultTimeout
	if p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		wait = r.s.Cfg.ReviewTimeout
	}
	return p.GetDeadline().AsTime().Add(-wait)
}

// outcomeRecord is the record of b, how step tag of the pending call p
// ended: of p's sending, unless b names another call (and its attempt).
// Its id is the same when a replica redoes the step.
func (r *Call) outcomeRecord(p *orchestratorv1.PendingCall, tag string, b outcomeBody) state.OutboxRecord {
	if b.ToolCallID == "" {
		// A record of another call than p's names its attempt itself.
		b.ToolCallID, b.Attempt = p.GetToolCall().GetToolCallId(), p.GetAttempt()
	}
	b.RunID, b.Kind, b.At = r.RunID, p.GetKind(), r.s.Now().UnixNano()
	body, err := json.Marshal(b)
	if err != nil {
		// A struct of strings and numbers always encodes.
		body = nil
	}
	return state.OutboxRecord{
		ID:        fmt.Sprintf("%s/%s/%s/%d", r.RunID, b.ToolCallID, tag, p.GetPreviews()),
		SessionID: r.SessionID, Body: body,
	}
}
