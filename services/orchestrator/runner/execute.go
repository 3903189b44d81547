package runner

// This file turns a model's tool use into a host call: input parsing, budgets, and the audited dispatch.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

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
		r.s.Metrics.ToolCall(ctx, u.GetName(), metrics.OutcomeDeclined)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: fmt.Sprintf(format, args...)}, nil
	}
	input := u.GetInputJson()
	if strings.TrimSpace(input) == "" {
		input = "{}"
	}
	switch u.GetName() {
	case tool.DataCollection:
		var in dataCollectionInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON (%v); it may have been cut off by the output budget. Send a shorter script.", u.GetName(), err)
		}
		if strings.TrimSpace(in.Code) == "" {
			return bad("%s needs code: the read-only script to run.", u.GetName())
		}
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: tool.NameEnum(u.GetName()), Description: in.Description, HostApp: r.HostApp,
			HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{ToolCallId: r.HostCallID(u.GetId()), Mode: hostv1.Mode_MODE_READ_ONLY, Code: in.Code}}}
		return r.Dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION, in.Code)
	case tool.TaskAutomation:
		var in taskAutomationInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON (%v); it may have been cut off by the output budget. Prefer edits to resending a long script.", u.GetName(), err)
		}
		return r.automate(ctx, u, in)
	case tool.CaptureView:
		var in captureViewInput
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return bad("The input of %s is not valid JSON: %v.", u.GetName(), err)
		}
		view := in.View
		if view == "" {
			view = r.Host.GetViewDefaults().GetView()
		}
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: tool.NameEnum(u.GetName()), Description: "Render the " + view + " view", HostApp: r.HostApp,
			HostRequest: &agentv1.ToolCall_ExportView{ExportView: &hostv1.ExportViewRequest{ToolCallId: r.HostCallID(u.GetId()), View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels(),
				MaxShortPx: r.model.GetVisionMaxShortPx(), PatchPx: r.model.GetVisionPatchPx(), MaxPatches: r.model.GetVisionMaxPatches()}}}
		return r.Dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED, "")
	}
	return bad("There is no tool named %q. The tools are %s, %s and %s.", u.GetName(), tool.DataCollection, tool.TaskAutomation, tool.CaptureView)
}

// maxPx is the image size to ask the host for: the model's own ceiling, so
// the view is neither wasted on a small limit nor scaled again; the host's
// default when the model names none. The rest of the model's image rule
// (short side, area, patch budget) rides beside it in the request.
func (r *runner) maxPx() int32 {
	if v := r.model.GetVisionMaxPx(); v > 0 {
		return v
	}
	return r.Host.GetViewDefaults().GetMaxPx()
}

// automate merges the script, charges the right budget and dispatches the
// automation with its stamped epilogue.
func (r *runner) automate(ctx context.Context, u *modelv1.ToolUseBlock, in taskAutomationInput) (*modelv1.ToolResultBlock, error) {
	bad := func(text string) (*modelv1.ToolResultBlock, error) {
		r.s.Metrics.ToolCall(ctx, u.GetName(), metrics.OutcomeDeclined)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: text}, nil
	}
	if (in.Code == nil) == (in.Edits == nil) {
		return bad("execute_task_automation needs exactly one of code (the whole script) or edits (line replacements in the last script); it got " +
			map[bool]string{true: "both.", false: "neither."}[in.Code != nil])
	}
	var script string
	var notes []string
	sess, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.Store.Get(ctx, r.SessionID) })
	if err != nil {
		return nil, r.StateErr(ctx, "read session", err)
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
	_, err = state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error {
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
			if r.RS.GetAutomations() > 0 {
				fix := !x.GetLastTaskCommitted()
				switch {
				case fix && int(x.GetFixRetryCount()) >= r.s.Cfg.MaxFixRetries:
					spent = budgetFix
					return nil
				case !fix && int(x.GetIterationCount()) >= r.s.Cfg.MaxIterations:
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
		return nil, r.StateErr(ctx, "charge automation budget", err)
	}
	if spent != budgetNone {
		r.RS.Capped = true
		r.Log.Info("automation budget spent", "tool_call", u.GetId())
		fix, limit := spent == budgetFix, r.s.Cfg.MaxIterations
		if fix {
			limit = r.s.Cfg.MaxFixRetries
		}
		r.s.Metrics.CapReached(ctx, fix)
		return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), Text: capText(fix, limit)}, nil
	}
	r.RS.Automations++

	ep, err := r.s.Capability.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: r.HostApp})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, Message: fmt.Sprintf("get the change-report epilogue for host %q from the capability service: %v", r.HostApp, status.Convert(err).Message()), Retryable: true}
	}
	stamp := ep.GetEpilogue()
	exec := &hostv1.ExecuteRequest{
		ToolCallId: r.HostCallID(u.GetId()), Mode: hostv1.Mode_MODE_TRANSACTION, Code: script,
		TransactionName: transactionName(in.Description),
		Epilogue:        &hostv1.Epilogue{Code: stamp.GetCode(), ContentHash: stamp.GetContentHash()},
		TimeoutMs:       min(r.s.Cfg.HostScriptTimeout, r.s.Cfg.ToolResultTimeout).Milliseconds(),
	}
	if view := r.Host.GetViewDefaults().GetView(); view != "" {
		exec.Capture = &hostv1.Capture{View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels(),
			MaxShortPx: r.model.GetVisionMaxShortPx(), PatchPx: r.model.GetVisionPatchPx(), MaxPatches: r.model.GetVisionMaxPatches(),
			Framing: r.Host.GetViewDefaults().GetFraming()}
		if n := r.s.Cfg.ReviewModelBytes; n > 0 {
			// The person's 3D review of what the script leaves; kept out of
			// what the model is shown (call.keepModels).
			exec.Capture.Model, exec.Capture.ModelMaxBytes = true, n
		}
	}
	tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: tool.NameEnum(u.GetName()), Description: in.Description, HostApp: r.HostApp,
		HostRequest: &agentv1.ToolCall_Execute{Execute: exec}, EpilogueStamp: epilogueStamp(stamp), MergeNotes: notes}
	return r.Dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, script)
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
