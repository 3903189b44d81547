package orchestrator

// This file decides a pending call: takes its result or its absence, and settles the session.

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// take closes the pending call's mailbox for good and answers what it held;
// rec, when set, is the outcome record put in the same step.
func (r *runner) take(ctx context.Context, p *orchestratorv1.PendingCall, rec *state.OutboxRecord) (state.Delivery, error) {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	d, _, err := retryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		if rec != nil {
			return r.s.store.DecideRecord(ctx, r.sessionID, p.GetToolCall().GetToolCallId(), *rec)
		}
		return r.s.store.Decide(ctx, r.sessionID, p.GetToolCall().GetToolCallId())
	})
	if err != nil {
		return d, r.stateErr(ctx, "decide tool call", err)
	}
	if rec != nil {
		r.s.outbox.kick(r.sessionID)
	}
	r.unrouteHost(cctx, p.GetToolCall(), nil)
	r.s.metrics.resumed(cctx, toolNameOf(p.GetToolCall()), r.waitStart(p), true)
	return d, nil
}

// clearPending drops the session's pending call when it is this run's and,
// with a result, records what the session needs of it. The session as
// stored is kept for the next turn, which needs no read of its own then.
func (r *runner) clearPending(ctx context.Context, u *modelv1.ToolUseBlock, hr *hostv1.HostResult) error {
	sess, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
			if x.GetPendingToolCall().GetRunId() == r.runID {
				x.PendingToolCall = nil
			}
			if hr != nil {
				x.LastCompletedTool = u.GetName()
				if u.GetName() == toolTaskAutomation {
					x.LastTaskCommitted = hr.GetCommitted()
				}
			}
			return nil
		})
	})
	if err != nil {
		return r.stateErr(ctx, "record tool result", err)
	}
	r.sess = sess
	return nil
}

// decide closes a pending call for good and returns what the model is told:
// the result, or that none came. A result that races the deadline or a
// cancel is either taken here or refused, never accepted and then dropped.
// A courier that could not deliver the call ends the run with its error.
func (r *runner) decide(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	log := r.log.With("tool_call", u.GetId())
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	callID := p.GetToolCall().GetToolCallId()
	// How the call ended is put in the outbox in the same step as the
	// decision, and written to the audit log and the history after it.
	rec := r.outcomeRecord(p, "end", outcomeBody{ToolName: u.GetName(), Scope: scopeAuditAndHistory, AwaitingReview: p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW})
	d, ok, err := retryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.DecideRecord(ctx, r.sessionID, callID, rec)
	})
	if err != nil {
		return nil, r.stateErr(ctx, "decide tool call", err)
	}
	r.s.outbox.kick(r.sessionID)
	// A review that never came, or a decision taken after the run gave up,
	// is no host result: the script never left.
	if _, isReview := asReviewDecision(d.Content); isReview || p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		ok = false
	}
	var hr *hostv1.HostResult
	if ok {
		hr = d.Content.GetResult()
		if hr == nil {
			hr = &hostv1.HostResult{}
		}
	}
	if err := r.clearPending(cctx, u, hr); err != nil {
		return nil, err
	}
	r.unrouteHost(cctx, p.GetToolCall(), r.sess)
	r.s.metrics.resumed(cctx, u.GetName(), r.waitStart(p), ok)
	if !ok {
		log.Info("no tool result")
		r.s.metrics.toolCall(cctx, u.GetName(), outcomeNoResult)
		res := &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: noResultText(r.s.cfg.ToolResultTimeout.String())}
		return res, r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			ToolCallId: callID, ToolName: toolNameEnum(u.GetName()), NoResult: true,
		}}}}})
	}
	if f, failed := asCourierFailure(d.Content); failed && ok {
		log.Info("courier could not deliver the call", "code", f.GetCode().String(), "message", f.GetMessage())
		res := &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: courierFailureText(f)}
		return res, &runError{code: f.GetCode(), message: courierFailureMessage(f), retryable: true}
	}
	log.Info("tool result received", "committed", hr.GetCommitted(), "failed", hr.GetError() != nil)
	r.s.metrics.mailboxDelivered(cctx, d.Trace)
	r.s.metrics.toolCall(cctx, u.GetName(), resultOutcome(u.GetName(), hr))
	if len(d.Trace) > 0 {
		// The request that carried the result is linked to the run's trace.
		rctx := r.s.env.Tel.Propagator.Extract(context.WithoutCancel(ctx), propagation.MapCarrier(d.Trace))
		if sc := trace.SpanContextFromContext(rctx); sc.IsValid() {
			trace.SpanFromContext(ctx).AddLink(trace.LinkFromContext(rctx))
		}
	}
	res := &modelv1.ToolResultBlock{
		ToolUseId: u.GetId(), Name: u.GetName(), IsError: hr.GetError() != nil,
		Text: renderResult(u.GetName(), hr, r.s.cfg.MaxToolResultChars),
	}
	if notes := p.GetMergeNotes(); len(notes) > 0 {
		res.Text += "\n\nMerge notes (advisory; the merged script ran as it is):\n- " + strings.Join(notes, "\n- ")
	}
	if p.GetEdited() || p.GetReviewerScript() {
		res.Text += "\n\nThe person reviewing edited your script before approving it; what ran is their version, which edits now apply to."
	}
	for _, img := range hr.GetImages() {
		res.Images = append(res.Images, &modelv1.ImageBlock{MimeType: img.GetMimeType(), Data: img.GetData()})
	}
	return res, r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
		ToolCallId: callID, ToolName: toolNameEnum(u.GetName()), Result: hr,
	}}}}})
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

// settle leaves a run that ends early consistent: its pending call decided
// (a late result is then refused, not accepted and lost) and every call of
// the last assistant message answered, so the transcript stays valid.
func (r *runner) settle(ctx context.Context) error {
	if r.seq == 0 {
		seq, err := r.lastSeq(ctx)
		if err != nil {
			return err
		}
		r.seq = seq
	}
	if r.msgs == nil {
		msgs, err := retryStore(ctx, func(ctx context.Context) ([]*modelv1.Message, error) { return r.s.store.Transcript(ctx, r.sessionID) })
		if err != nil {
			return err
		}
		r.msgs = msgs
	}
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].GetRole() != modelv1.Role_ROLE_ASSISTANT {
		return nil
	}
	uses := toolUses(r.msgs[n-1])
	if len(uses) == 0 {
		return nil
	}
	for _, u := range uses[min(len(r.rs.GetResults()), len(uses)):] {
		res := notRun(u)
		if p := r.rs.GetPending(); p != nil && pendingUse(p) == u.GetId() {
			// A courier's failure still answers the call, so the transcript
			// keeps its result; only a store failure stops here.
			got, err := r.decide(ctx, u, p)
			if got == nil {
				return err
			}
			res = got
			r.rs.Pending = nil
		}
		r.rs.Results = append(r.rs.Results, res)
	}
	results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
	for _, res := range r.rs.GetResults() {
		results.Content = append(results.Content, toolResult(res))
	}
	r.msgs = append(r.msgs, results)
	r.rs.Results = nil
	return r.save(ctx)
}
