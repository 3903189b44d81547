package call

// This file keeps a cancel from unrunning a script: a cancelled run whose
// call already left for its host waits for what the host did, records it,
// and says so, before it ends.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// AwaitOutcome says whether the cancelled run must wait for the outcome of
// its pending call p, and then sets SuspendFor to the time left: p left for
// its linked host, which is online (p is in the host's delivery log, which
// the host's live link reads as soon as it grows), no result came yet, and
// p's deadline has not passed. A call still waiting for a host is taken back
// when the run decides it, and never runs; one that left cannot be unrun.
// The first time, the run's followers are told (ScriptLeft) and p records
// the wait, so a cancel that comes again neither wakes the run nor tells
// them twice.
func (r *Call) AwaitOutcome(ctx context.Context, p *orchestratorv1.PendingCall) bool {
	if p == nil || p.GetStage() == orchestratorv1.Stage_STAGE_AWAITING_REVIEW {
		return false
	}
	left := p.GetDeadline().AsTime().Sub(r.s.Now())
	if left <= deadlineSlack {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	tc := p.GetToolCall()
	onItsWay, err := r.onItsWay(ctx, tc)
	if err != nil {
		r.Log.Warn("find whether the cancelled run's call left for its host", "tool_call", tc.GetToolCallId(), "err", err)
	}
	if !onItsWay {
		return false
	}
	// A result that came meanwhile is taken at once, as any other.
	if _, delivered, err := r.s.Store.Peek(ctx, r.SessionID, tc.GetToolCallId()); err != nil || delivered {
		return false
	}
	if !p.GetCancelAwaitsOutcome() {
		p.CancelAwaitsOutcome = true
		r.Log.Info("cancelled after the script left for the host; waiting for its outcome", "tool_call", tc.GetToolCallId(), "wait", left)
		text := ScriptLeftText(r.s.Cfg.ToolResultTimeout)
		if err := r.w.EmitTo(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ScriptLeft{
			ScriptLeft: &agentv1.ScriptLeft{ToolCallId: BaseCallID(tc.GetToolCallId()), Text: text}}}}}); err != nil {
			r.Log.Warn("tell the cancelled run's followers that its script left", "err", err)
		}
		if err := r.w.SaveRun(ctx); err != nil {
			r.Log.Warn("record that the cancelled run waits for its script", "err", err)
		}
	}
	r.SuspendFor = left
	return true
}

// previewMark joins a call id and a preview's number into the preview's own
// call id ("<id>.preview<n>"), so the host's ledger never takes a preview
// for the commit it previews; BaseCallID takes it off again.
const previewMark = ".preview"

// BaseCallID is the model's tool call that a call id carries out: itself,
// or the call a preview's id previews.
func BaseCallID(id string) string {
	base, _, _ := strings.Cut(id, previewMark)
	return base
}

// ScriptLeftText tells a cancel's caller and the run's followers that the
// script had already left for its host, and what the run does about it.
func ScriptLeftText(timeout time.Duration) string {
	return fmt.Sprintf("The script had already left for the host when you cancelled, and a cancel cannot unrun it: the run waits for what the host does (up to %s, NEXUS_TOOL_RESULT_TIMEOUT), records it, and then ends.", timeout)
}

// onItsWay says whether tc is on its way to a linked host that is online:
// it is in that host's delivery log, which the host's live link reads as
// soon as it grows, so the host may be running it now. A call that waits for
// an offline host, or for a first host to link, is not.
func (r *Call) onItsWay(ctx context.Context, tc *agentv1.ToolCall) (bool, error) {
	if r.s.Hosts == nil || r.RS.GetEval() || tc.GetResultToken() == "" || tc.GetHostId() == "" {
		return false, nil
	}
	h, err := r.s.Hosts.GetHost(ctx, tc.GetHostId())
	if errors.Is(err, state.ErrNotFound) {
		return false, nil
	}
	if err != nil || !h.GetOnline() {
		return false, err
	}
	calls, err := r.s.Hosts.Calls(ctx, tc.GetHostId())
	if err != nil {
		return false, err
	}
	for _, c := range calls {
		if c.GetSessionId() == r.SessionID && c.GetToolCall().GetToolCallId() == tc.GetToolCallId() {
			return true, nil
		}
	}
	return false, nil
}

// CancelledRan is what the cancelled run ends by saying of a script that
// had left for its host: what it did, or that it did not answer in time.
func (r *Call) CancelledRan() string {
	switch {
	case r.Ran != "":
		return "The run was cancelled, but its script had already left for the host, and a cancel cannot unrun it: it already ran: " + r.Ran +
			". What it did is recorded in the audit log and the transcript. The session is ready for the next run."
	case r.LeftUnanswered:
		return "The run was cancelled after its script had left for the host, and the host did not answer within NEXUS_TOOL_RESULT_TIMEOUT: " +
			"whether it ran is unknown, so check the document. The session is ready for the next run."
	}
	return "The run was cancelled. The session is ready for the next run."
}

// ResultOutcome is how the call a ToolResult chunk answers ended, as the
// audit log records it.
func ResultOutcome(tr *agentv1.ToolResult) capabilityv1.DispatchOutcome {
	kind := capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED
	switch tr.GetToolName() {
	case agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION:
		kind = capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION
	case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
		kind = capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION
	}
	o, _, _ := toolOutcome(kind, &orchestratorv1.MailboxDelivery{Kind: &orchestratorv1.MailboxDelivery_Result{Result: tr.GetResult()}}, tr.GetNoResult())
	return o
}
