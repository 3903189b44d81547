package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// mailboxGrace keeps a mailbox a little longer than the run waits on it, so
// a result that races the timeout is refused cleanly rather than lost.
const mailboxGrace = time.Minute

type dataCollectionInput struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

type taskAutomationInput struct {
	Description string      `json:"description"`
	Code        *string     `json:"code"`
	Edits       *[]lineEdit `json:"edits"`
}

type captureViewInput struct {
	View string `json:"view"`
}

// execute runs one tool call and returns its result for the model. A non-nil
// error ends the run (cancel, lease loss, a dependency down); the result is
// still returned when there is one, so the transcript stays valid.
func (r *runner) execute(ctx context.Context, u *modelv1.ToolUseBlock) (*modelv1.ToolResultBlock, error) {
	bad := func(format string, args ...any) (*modelv1.ToolResultBlock, error) {
		r.s.metrics.toolCall(ctx, u.GetName(), outcomeDeclined)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: fmt.Sprintf(format, args...)}, nil
	}
	input := u.GetInputJson()
	if strings.TrimSpace(input) == "" {
		input = "{}"
	}
	switch u.GetName() {
	case toolDataCollection:
		var in dataCollectionInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON (%v); it may have been cut off by the output budget. Send a shorter script.", u.GetName(), err)
		}
		if strings.TrimSpace(in.Code) == "" {
			return bad("%s needs code: the read-only script to run.", u.GetName())
		}
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: toolNameEnum(u.GetName()), Description: in.Description, HostApp: r.hostApp,
			HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{ToolCallId: r.hostCallID(u.GetId()), Mode: hostv1.Mode_MODE_READ_ONLY, Code: in.Code}}}
		return r.dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION, in.Code)
	case toolTaskAutomation:
		var in taskAutomationInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON (%v); it may have been cut off by the output budget. Prefer edits to resending a long script.", u.GetName(), err)
		}
		return r.automate(ctx, u, in)
	case toolCaptureView:
		var in captureViewInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON: %v.", u.GetName(), err)
		}
		view := in.View
		if view == "" {
			view = r.host.GetViewDefaults().GetView()
		}
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: toolNameEnum(u.GetName()), Description: "Render the " + view + " view", HostApp: r.hostApp,
			HostRequest: &agentv1.ToolCall_ExportView{ExportView: &hostv1.ExportViewRequest{ToolCallId: r.hostCallID(u.GetId()), View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels(),
				MaxShortPx: r.model.GetVisionMaxShortPx(), PatchPx: r.model.GetVisionPatchPx(), MaxPatches: r.model.GetVisionMaxPatches()}}}
		return r.dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED, "")
	}
	return bad("There is no tool named %q. The tools are %s, %s and %s.", u.GetName(), toolDataCollection, toolTaskAutomation, toolCaptureView)
}

// maxPx is the image size to ask the host for: the model's own ceiling, so
// the view is neither wasted on a small limit nor scaled again; the host's
// default when the model names none. The rest of the model's image rule
// (short side, area, patch budget) rides beside it in the request.
func (r *runner) maxPx() int32 {
	if v := r.model.GetVisionMaxPx(); v > 0 {
		return v
	}
	return r.host.GetViewDefaults().GetMaxPx()
}

// automate merges the script, charges the right budget and dispatches the
// automation with its stamped epilogue.
func (r *runner) automate(ctx context.Context, u *modelv1.ToolUseBlock, in taskAutomationInput) (*modelv1.ToolResultBlock, error) {
	bad := func(text string) (*modelv1.ToolResultBlock, error) {
		r.s.metrics.toolCall(ctx, u.GetName(), outcomeDeclined)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: text}, nil
	}
	if (in.Code == nil) == (in.Edits == nil) {
		return bad("execute_task_automation needs exactly one of code (the whole script) or edits (line replacements in the last script); it got " +
			map[bool]string{true: "both.", false: "neither."}[in.Code != nil])
	}
	var script string
	var notes []string
	sess, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.store.Get(ctx, r.sessionID) })
	if err != nil {
		return nil, r.stateErr(ctx, "read session", err)
	}
	if in.Code != nil {
		script = *in.Code
		if strings.TrimSpace(script) == "" {
			return bad("execute_task_automation got an empty code; send the whole script, or edits to the last one.")
		}
	} else {
		if sess.GetCurrentScript() == "" {
			return bad("There is no script to edit yet; send the whole script in code.")
		}
		if len(*in.Edits) == 0 {
			return bad("execute_task_automation got an empty edits list; send at least one edit, or the whole script in code.")
		}
		script, notes = applyEdits(sess.GetCurrentScript(), *in.Edits)
	}

	// A fix follows an automation that did not commit, an iteration one that
	// did; the first automation of a run is neither. Separate caps keep a
	// stubborn typo from eating the allowance for improving a working result.
	//
	// The charge is retried while the store is away, so it must not count
	// twice when a try reached the store and only its answer was lost. Only
	// this run charges the session's budgets, so counters that stand where
	// an earlier try left them, beside this script, are that try's write.
	spent := budgetNone
	var charged *agentv1.Session
	_, err = retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
			if charged != nil && x.GetCurrentScript() == script &&
				x.GetFixRetryCount() == charged.GetFixRetryCount() && x.GetIterationCount() == charged.GetIterationCount() {
				return nil
			}
			defer func() {
				if spent == budgetNone {
					charged = &agentv1.Session{FixRetryCount: x.GetFixRetryCount(), IterationCount: x.GetIterationCount()}
				}
			}()
			spent = budgetNone
			if r.rs.GetAutomations() > 0 {
				fix := !x.GetLastTaskCommitted()
				switch {
				case fix && int(x.GetFixRetryCount()) >= r.s.cfg.MaxFixRetries:
					spent = budgetFix
					return nil
				case !fix && int(x.GetIterationCount()) >= r.s.cfg.MaxIterations:
					spent = budgetIteration
					return nil
				case fix:
					x.FixRetryCount++
				default:
					x.IterationCount++
				}
			}
			x.CurrentScript = script
			return nil
		})
	})
	if err != nil {
		return nil, r.stateErr(ctx, "charge automation budget", err)
	}
	if spent != budgetNone {
		r.rs.Capped = true
		r.log.Info("automation budget spent", "tool_call", u.GetId())
		fix, limit := spent == budgetFix, r.s.cfg.MaxIterations
		if fix {
			limit = r.s.cfg.MaxFixRetries
		}
		r.s.metrics.capReached(ctx, fix)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), Text: capText(fix, limit)}, nil
	}
	r.rs.Automations++

	ep, err := r.s.capability.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: r.hostApp})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, message: fmt.Sprintf("get the change-report epilogue for host %q from the capability service: %v", r.hostApp, status.Convert(err).Message()), retryable: true}
	}
	stamp := ep.GetEpilogue()
	exec := &hostv1.ExecuteRequest{
		ToolCallId: r.hostCallID(u.GetId()), Mode: hostv1.Mode_MODE_TRANSACTION, Code: script,
		TransactionName: transactionName(in.Description),
		Epilogue:        &hostv1.Epilogue{Code: stamp.GetCode(), ContentHash: stamp.GetContentHash()},
		TimeoutMs:       min(r.s.cfg.HostScriptTimeout, r.s.cfg.ToolResultTimeout).Milliseconds(),
	}
	if view := r.host.GetViewDefaults().GetView(); view != "" {
		exec.Capture = &hostv1.Capture{View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels(),
			MaxShortPx: r.model.GetVisionMaxShortPx(), PatchPx: r.model.GetVisionPatchPx(), MaxPatches: r.model.GetVisionMaxPatches(),
			Framing: r.host.GetViewDefaults().GetFraming()}
	}
	tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: toolNameEnum(u.GetName()), Description: in.Description, HostApp: r.hostApp,
		HostRequest: &agentv1.ToolCall_Execute{Execute: exec}, EpilogueStamp: epilogueStamp(stamp), MergeNotes: notes}
	return r.dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, script)
}

// hostCallID is the id a host's ledger runs a call under. A model's tool call
// ids are unique only within its conversation (a scripted or replayed model
// numbers them from 1 in every session), while one host serves many sessions
// and answers a repeated id from its ledger without running it: the run's id
// makes the host's id unique to this run's call, and the same across the
// retries of it.
func (r *runner) hostCallID(toolCallID string) string {
	return r.runID + "/" + toolCallID
}

// transactionName names the undo step the person sees in the host.
func transactionName(desc string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if r := []rune(desc); len(r) > 60 {
		desc = string(r[:57]) + "..."
	}
	if desc == "" {
		return "Nexus automation"
	}
	return "Nexus: " + desc
}

// dispatch sends a tool call on its way and suspends the run until its
// result, a review decision, a cancel or the deadline wakes it, on whichever
// replica. Under the session's review policy the call first waits for a
// person (and, under the preview policy, first runs as a preview).
func (r *runner) dispatch(ctx context.Context, u *modelv1.ToolUseBlock, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string) (*modelv1.ToolResultBlock, error) {
	sess, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.store.Get(ctx, r.sessionID) })
	if err != nil {
		return nil, r.stateErr(ctx, "read session", err)
	}
	policy := effectivePolicy(sess.GetReviewPolicy())
	p := &orchestratorv1.PendingCall{Kind: kind, MergeNotes: tc.GetMergeNotes()}
	switch {
	case !needsReview(policy, u.GetName()):
		if err := r.audit(ctx, tc, kind, script, nil, false); err != nil {
			return nil, err
		}
		return nil, r.offer(ctx, p, tc, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED)
	case policy == agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW && u.GetName() == toolTaskAutomation:
		p.CommitCall = tc
		return nil, r.preview(ctx, p)
	default:
		p.CommitCall = tc
		call := proto.Clone(tc).(*agentv1.ToolCall)
		call.Review = agentv1.ReviewState_REVIEW_STATE_AWAITING
		return nil, r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_AWAITING_REVIEW)
	}
}

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
	if err := r.audit(ctx, call, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, script, nil, false); err != nil {
		return err
	}
	return r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_PREVIEW)
}

// offer makes call the one the run waits on: it opens the mailbox, marks the
// session's pending call, saves the run and streams the call, then suspends.
// A call that awaits review gets no result token: its mailbox token is kept
// in the run state for ReviewToolCall alone.
func (r *runner) offer(ctx context.Context, p *orchestratorv1.PendingCall, call *agentv1.ToolCall, stage orchestratorv1.Stage) error {
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
	p.ToolCall, p.Stage, p.Emitted = call, stage, false
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
func (r *runner) sendCall(ctx context.Context) error {
	p := r.rs.GetPending()
	if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: p.GetToolCall()}}); err != nil {
		return err
	}
	p.Emitted = true
	return r.saveRun(ctx)
}

// collect takes up a suspended call: its result, a review decision, or none
// when the run was cancelled or the deadline passed. A run woken with
// neither (a refused result, say) goes back to waiting.
func (r *runner) collect(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	if !p.GetEmitted() {
		if err := r.sendCall(ctx); err != nil {
			return nil, err
		}
	}
	cancelled := false
	select {
	case <-r.cancelled:
		cancelled = true
	default:
	}
	callID := p.GetToolCall().GetToolCallId()
	d, delivered, err := retryStore3(ctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.Peek(ctx, r.sessionID, callID)
	})
	if err != nil {
		return nil, r.stateErr(ctx, "read mailbox", err)
	}
	left := p.GetDeadline().AsTime().Sub(r.s.now())
	if !delivered && !cancelled && left > deadlineSlack {
		r.suspendFor = left
		return nil, errSuspended
	}
	if !cancelled {
		switch {
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW && delivered:
			return r.reviewed(ctx, u, p)
		case p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW:
			r.s.metrics.resumed(ctx, u.GetName(), r.waitStart(p), false)
			return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_REVIEW_TIMEOUT, message: fmt.Sprintf("nobody approved or declined the script of tool call %s within %s (NEXUS_REVIEW_TIMEOUT), so the run was ended; nothing ran", u.GetId(), r.s.cfg.ReviewTimeout), retryable: true}
		case p.GetStage() == orchestratorv1.Stage_STAGE_PREVIEW && delivered && d.Result.GetPreviewed() && d.Result.GetError() == nil:
			return nil, r.previewed(ctx, p)
		case p.GetCommitCall() != nil && p.GetPreviews() > 0 && delivered && d.Result.GetError().GetType() == revisionChanged:
			// The document changed since the preview the person approved:
			// preview again, and ask again, before anything commits.
			refused, err := r.take(ctx, p)
			if err != nil {
				return nil, err
			}
			// The refused sending keeps its own end in the audit log.
			if err := r.auditOutcome(ctx, p.GetToolCall().GetToolCallId(), p.GetKind(), refused.Result, false, nil); err != nil {
				r.log.Warn("record the refused dispatch", "tool_call", u.GetId(), "err", err)
			}
			r.log.Info("document changed since the preview; previewing again", "tool_call", u.GetId())
			return nil, r.preview(ctx, p)
		}
	}
	res, err := r.decide(ctx, u, p)
	if err == nil && cancelled {
		err = errCancelled
	}
	return res, err
}

// revisionChanged is the host's error type for a run refused because the
// document is not at the expected revision.
const revisionChanged = "RevisionChanged"

// previewed shows the preview's effect beside the script and waits for the
// person's decision.
func (r *runner) previewed(ctx context.Context, p *orchestratorv1.PendingCall) error {
	d, err := r.take(ctx, p)
	if err != nil {
		return err
	}
	hr := d.Result
	r.recordOutcome(ctx, p.GetToolCall().GetToolCallId(), toolTaskAutomation, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, hr, false, nil)
	if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
		ToolCallId: p.GetToolCall().GetToolCallId(), ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, Result: hr, Preview: true,
	}}}}}); err != nil {
		return err
	}
	call := proto.Clone(p.GetCommitCall()).(*agentv1.ToolCall)
	call.Review = agentv1.ReviewState_REVIEW_STATE_AWAITING
	call.Preview = hr
	return r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_AWAITING_REVIEW)
}

// reviewed carries out a person's decision: a decline answers the model, an
// approval sends the script (as edited) to the courier.
func (r *runner) reviewed(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	d, err := r.take(ctx, p)
	if err != nil {
		return nil, err
	}
	dec, ok := asReviewDecision(d.Result)
	if !ok {
		return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_INTERNAL, message: fmt.Sprintf("the review mailbox of tool call %s held something other than a decision", u.GetId()), retryable: true}
	}
	edited := edits(dec.GetCode(), p.GetCommitCall())
	if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ReviewDecided{ReviewDecided: &agentv1.ReviewDecided{
		ToolCallId: u.GetId(), Verdict: dec.GetVerdict(), Reviewer: dec.GetReviewer(), DecideTime: dec.GetDecideTime(), Edited: edited,
	}}}}}); err != nil {
		return nil, err
	}
	r.log.Info("tool call reviewed", "tool_call", u.GetId(), "verdict", dec.GetVerdict().String(), "edited", edited)
	if dec.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
		// The audit log keeps the declined bytes too, with who declined
		// them, so a reader sees what was refused and by whom; its outcome
		// row says nothing ran.
		if err := r.audit(ctx, p.GetCommitCall(), p.GetKind(), p.GetCommitCall().GetExecute().GetCode(), dec, false); err != nil {
			return nil, err
		}
		hr := declinedResult(dec.GetReason())
		r.recordOutcome(ctx, u.GetId(), u.GetName(), p.GetKind(), hr, false, dec)
		r.s.metrics.toolCall(ctx, u.GetName(), outcomeDeclined)
		if err := r.clearPending(ctx, u, nil); err != nil {
			return nil, err
		}
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: renderResult(u.GetName(), hr, r.s.cfg.MaxToolResultChars)}, nil
	}
	if edited && u.GetName() == toolTaskAutomation {
		// Line edits of the model's next script apply to what runs.
		if _, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
			return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error { x.CurrentScript = dec.GetCode(); return nil })
		}); err != nil {
			return nil, r.stateErr(ctx, "record the edited script", err)
		}
	}
	if edited && p.GetPreviews() > 0 {
		// The person approved the effect they saw, not that of their edit:
		// the edit runs as a preview of its own and waits for its own
		// decision before anything commits.
		p.GetCommitCall().GetExecute().Code = dec.GetCode()
		p.ReviewerScript = true
		r.log.Info("edited script; previewing it before it commits", "tool_call", u.GetId())
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
	if err := r.audit(ctx, call, p.GetKind(), call.GetExecute().GetCode(), dec, edited || p.GetReviewerScript()); err != nil {
		return nil, err
	}
	return nil, r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED)
}

// declinedResult is what the model is told of a declined script.
func declinedResult(reason string) *hostv1.HostResult {
	msg := "the person reviewing declined to run this script; nothing ran and the document is unchanged"
	if reason != "" {
		msg += ". Their reason: " + reason
	}
	return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "Declined", Message: msg}}
}

// take closes the pending call's mailbox for good and answers what it held.
func (r *runner) take(ctx context.Context, p *orchestratorv1.PendingCall) (state.Delivery, error) {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	d, _, err := retryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.Decide(ctx, r.sessionID, p.GetToolCall().GetToolCallId())
	})
	if err != nil {
		return d, r.stateErr(ctx, "decide tool call", err)
	}
	r.s.metrics.resumed(cctx, toolNameOf(p.GetToolCall()), r.waitStart(p), true)
	return d, nil
}

// clearPending drops the session's pending call when it is this run's and,
// with a result, records what the session needs of it.
func (r *runner) clearPending(ctx context.Context, u *modelv1.ToolUseBlock, hr *hostv1.HostResult) error {
	_, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
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
	d, ok, err := retryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.Decide(ctx, r.sessionID, callID)
	})
	if err != nil {
		return nil, r.stateErr(ctx, "decide tool call", err)
	}
	// A review that never came, or a decision taken after the run gave up,
	// is no host result: the script never left.
	if _, isReview := asReviewDecision(d.Result); isReview || p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		ok = false
	}
	var hr *hostv1.HostResult
	if ok {
		hr = d.Result
		if hr == nil {
			hr = &hostv1.HostResult{}
		}
	}
	if err := r.clearPending(cctx, u, hr); err != nil {
		return nil, err
	}
	r.recordOutcome(cctx, callID, u.GetName(), p.GetKind(), hr, !ok, nil)
	r.s.metrics.resumed(cctx, u.GetName(), r.waitStart(p), ok)
	if !ok {
		log.Info("no tool result")
		r.s.metrics.toolCall(cctx, u.GetName(), outcomeNoResult)
		res := &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: noResultText(r.s.cfg.ToolResultTimeout.String())}
		return res, r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			ToolCallId: callID, ToolName: toolNameEnum(u.GetName()), NoResult: true,
		}}}}})
	}
	if f, failed := asCourierFailure(hr); failed {
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
		res := &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: "Not run: the run stopped before this call."}
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

// deadlineSlack treats a run woken this close to its deadline as timed out,
// so a small difference between the store's clock and this replica's does
// not send it back to sleep for a moment.
const deadlineSlack = time.Second

// audit records the exact bytes that leave for the host: the script and
// the epilogue, each with its hash, and who approved them when a person did.
func (r *runner) audit(ctx context.Context, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string, review *orchestratorv1.ReviewDecision, edited bool) error {
	if script == "" {
		return nil
	}
	now := timestamppb.New(r.s.now())
	callID := tc.GetToolCallId()
	entries := []*capabilityv1.Dispatch{{
		User: r.owner, SessionId: r.sessionID, RunId: r.runID, ToolCallId: callID, Kind: kind, DispatchTime: now,
		Stamp:    &capabilityv1.StampedScript{HostApp: r.hostApp, CapabilityVersion: r.host.GetCapabilityVersion(), Code: script, ContentHash: sha256Hex(script)},
		Reviewer: review.GetReviewer(), ReviewTime: review.GetDecideTime(), Edited: edited,
	}}
	if ep := tc.GetExecute().GetEpilogue(); ep.GetCode() != "" {
		entries = append(entries, &capabilityv1.Dispatch{
			User: r.owner, SessionId: r.sessionID, RunId: r.runID, ToolCallId: callID, Kind: capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, DispatchTime: now,
			Stamp: &capabilityv1.StampedScript{HostApp: tc.GetEpilogueStamp().GetHostApp(), CapabilityVersion: tc.GetEpilogueStamp().GetCapabilityVersion(),
				Code: ep.GetCode(), ContentHash: ep.GetContentHash()},
		})
	}
	if _, err := r.s.capability.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: entries}); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, message: fmt.Sprintf("record the dispatch of tool call %s in the audit log: %v", callID, status.Convert(err).Message()), retryable: true}
	}
	return nil
}
