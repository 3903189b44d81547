package orchestrator

// This file turns a model's tool use into a host call: input parsing, budgets, and the audited dispatch.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
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
	if sess.GetNewDocument() {
		newDocumentKey(tc, sess.GetSessionId())
	}
	policy := effectivePolicy(sess.GetReviewPolicy())
	p := &orchestratorv1.PendingCall{Kind: kind, MergeNotes: tc.GetMergeNotes()}
	switch {
	case !needsReview(policy, u.GetName()):
		attempt, err := r.audit(ctx, tc, kind, script, nil, false)
		if err != nil {
			return nil, err
		}
		return nil, r.offer(ctx, p, tc, orchestratorv1.Stage_STAGE_CARRY_UNSPECIFIED, attempt)
	case policy == agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW && u.GetName() == toolTaskAutomation:
		p.CommitCall = tc
		return nil, r.preview(ctx, p)
	default:
		p.CommitCall = tc
		call := proto.Clone(tc).(*agentv1.ToolCall)
		call.Review = agentv1.ReviewState_REVIEW_STATE_AWAITING
		return nil, r.offer(ctx, p, call, orchestratorv1.Stage_STAGE_AWAITING_REVIEW, 0)
	}
}

// deadlineSlack treats a run woken this close to its deadline as timed out,
// so a small difference between the store's clock and this replica's does
// not send it back to sleep for a moment.
const deadlineSlack = time.Second

// audit records the exact bytes that leave for the host: the script and
// the epilogue, each with its hash, and who approved them when a person did.
// It returns the attempt the audit log gave this sending (0 when nothing
// was recorded), which the call's outcome names.
func (r *runner) audit(ctx context.Context, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string, review *orchestratorv1.ReviewDecision, edited bool) (int32, error) {
	if script == "" {
		return 0, nil
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
	// The outcome of the call's last sending goes in before this one, so it
	// is recorded against the sending it ended.
	if err := r.s.outbox.flush(ctx, r.sessionID); err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		return 0, &runError{code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, message: fmt.Sprintf("record the outcomes before the dispatch of tool call %s: %v", callID, err), retryable: true}
	}
	resp, err := r.s.capability.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: entries})
	if err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		return 0, &runError{code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, message: fmt.Sprintf("record the dispatch of tool call %s in the audit log: %v", callID, status.Convert(err).Message()), retryable: true}
	}
	return resp.GetAttempt(), nil
}
