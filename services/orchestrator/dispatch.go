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
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: u.GetName(), Description: in.Description, HostApp: r.hostApp,
			HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{ToolCallId: u.GetId(), Mode: hostv1.Mode_MODE_READ_ONLY, Code: in.Code}}}
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
		tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: u.GetName(), Description: "Render the " + view + " view", HostApp: r.hostApp,
			HostRequest: &agentv1.ToolCall_ExportView{ExportView: &hostv1.ExportViewRequest{ToolCallId: u.GetId(), View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels()}}}
		return r.dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED, "")
	}
	return bad("There is no tool named %q. The tools are %s, %s and %s.", u.GetName(), toolDataCollection, toolTaskAutomation, toolCaptureView)
}

// maxPx is the image size to ask the host for: the model's own ceiling, so
// the view is neither wasted on a small limit nor scaled again; the host's
// default when the model names none.
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
	sess, err := r.s.store.Get(ctx, r.sessionID)
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
	var capped *modelv1.ToolResultBlock
	_, err = r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
		capped = nil
		if r.rs.GetAutomations() > 0 {
			fix := !x.GetLastTaskCommitted()
			switch {
			case fix && int(x.GetFixRetryCount()) >= r.s.cfg.MaxFixRetries:
				capped = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), Text: capText(true, r.s.cfg.MaxFixRetries)}
				return nil
			case !fix && int(x.GetIterationCount()) >= r.s.cfg.MaxIterations:
				capped = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), Text: capText(false, r.s.cfg.MaxIterations)}
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
	if err != nil {
		return nil, r.stateErr(ctx, "charge automation budget", err)
	}
	if capped != nil {
		r.rs.Capped = true
		r.log.Info("automation budget spent", "tool_call", u.GetId())
		r.s.metrics.capReached(ctx, capped.GetText() == capText(true, r.s.cfg.MaxFixRetries))
		return capped, nil
	}
	r.rs.Automations++

	ep, err := r.s.capability.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: r.hostApp})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &runError{"capability_unavailable", fmt.Sprintf("get the change-report epilogue for host %q from the capability service: %v", r.hostApp, status.Convert(err).Message()), true}
	}
	stamp := ep.GetEpilogue()
	exec := &hostv1.ExecuteRequest{
		ToolCallId: u.GetId(), Mode: hostv1.Mode_MODE_TRANSACTION, Code: script,
		TransactionName: transactionName(in.Description),
		Epilogue:        &hostv1.Epilogue{Code: stamp.GetCode(), ContentHash: stamp.GetSha256()},
		TimeoutMs:       min(r.s.cfg.HostScriptTimeout, r.s.cfg.ToolResultTimeout).Milliseconds(),
	}
	if view := r.host.GetViewDefaults().GetView(); view != "" {
		exec.Capture = &hostv1.Capture{View: view, MaxPx: r.maxPx(), MaxPixels: r.model.GetVisionMaxPixels(),
			Framing: r.host.GetViewDefaults().GetFraming()}
	}
	tc := &agentv1.ToolCall{ToolCallId: u.GetId(), ToolName: u.GetName(), Description: in.Description, HostApp: r.hostApp,
		HostRequest: &agentv1.ToolCall_Execute{Execute: exec}, EpilogueStamp: stamp, MergeNotes: notes}
	return r.dispatch(ctx, u, tc, capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, script)
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

// dispatch sends a tool call to the courier and suspends the run until its
// result, a cancel or the deadline wakes it, on whichever replica.
func (r *runner) dispatch(ctx context.Context, u *modelv1.ToolUseBlock, tc *agentv1.ToolCall, kind capabilityv1.ScriptKind, script string) (*modelv1.ToolResultBlock, error) {
	log := r.log.With("tool_call", u.GetId())
	tc.ResultToken = newToken()
	// The mailbox opens before the courier can know the call, so no result
	// can arrive before it.
	if err := retry(ctx, func(ctx context.Context) error {
		return r.s.store.Expect(ctx, r.sessionID, u.GetId(), tc.GetResultToken(), r.s.cfg.ToolResultTimeout+mailboxGrace)
	}); err != nil {
		return nil, r.stateErr(ctx, "open mailbox", err)
	}
	if _, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
			x.PendingToolCall = &agentv1.PendingToolCall{ToolCallId: u.GetId(), ToolName: u.GetName(), RunId: r.runID, DispatchTime: timestamppb.New(r.s.now())}
			return nil
		})
	}); err != nil {
		return nil, r.stateErr(ctx, "record pending call", err)
	}
	if err := r.audit(ctx, u.GetId(), kind, script, tc.GetEpilogueStamp()); err != nil {
		return nil, err
	}
	// The courier posts the result with this trace context, so the request
	// that carries it, on whichever replica, joins the run's trace.
	carrier := propagation.MapCarrier{}
	r.s.env.Tel.Propagator.Inject(ctx, carrier)
	tc.Traceparent = carrier.Get("traceparent")
	r.rs.Pending = &orchestratorv1.PendingCall{
		ToolCall: tc, Kind: kind, MergeNotes: tc.GetMergeNotes(),
		Deadline: timestamppb.New(r.s.now().Add(r.s.cfg.ToolResultTimeout)),
	}
	if err := r.saveRun(ctx); err != nil {
		return nil, err
	}
	if err := r.sendCall(ctx); err != nil {
		return nil, err
	}
	log.Info("tool call dispatched", "tool", u.GetName())
	r.s.metrics.suspended(ctx)
	r.suspendFor = r.s.cfg.ToolResultTimeout
	return nil, errSuspended
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

// collect takes up a suspended call: its result, or none when the run was
// cancelled or the deadline passed. A run woken with neither (a refused
// result, say) goes back to waiting.
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
	_, delivered, err := retryStore3(ctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.Peek(ctx, r.sessionID, u.GetId())
	})
	if err != nil {
		return nil, r.stateErr(ctx, "read mailbox", err)
	}
	left := p.GetDeadline().AsTime().Sub(r.s.now())
	if !delivered && !cancelled && left > deadlineSlack {
		r.suspendFor = left
		return nil, errSuspended
	}
	res, err := r.decide(ctx, u, p)
	if err == nil && cancelled {
		err = errCancelled
	}
	return res, err
}

// decide closes a pending call for good and returns what the model is told:
// the result, or that none came. A result that races the deadline or a
// cancel is either taken here or refused, never accepted and then dropped.
func (r *runner) decide(ctx context.Context, u *modelv1.ToolUseBlock, p *orchestratorv1.PendingCall) (*modelv1.ToolResultBlock, error) {
	log := r.log.With("tool_call", u.GetId())
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ccancel()
	d, ok, err := retryStore3(cctx, func(ctx context.Context) (state.Delivery, bool, error) {
		return r.s.store.Decide(ctx, r.sessionID, u.GetId())
	})
	if err != nil {
		return nil, r.stateErr(ctx, "decide tool call", err)
	}
	if _, err := retryStore(cctx, func(ctx context.Context) (*agentv1.Session, error) {
		return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error {
			if x.GetPendingToolCall().GetToolCallId() == u.GetId() {
				x.PendingToolCall = nil
			}
			if ok {
				x.LastCompletedTool = u.GetName()
				if u.GetName() == toolTaskAutomation {
					x.LastTaskCommitted = d.Result.GetCommitted()
				}
			}
			return nil
		})
	}); err != nil {
		return nil, r.stateErr(ctx, "record tool result", err)
	}
	r.recordToolOutcome(cctx, u, p.GetKind(), d.Result, !ok)
	r.s.metrics.resumed(cctx, u.GetName(), p.GetDeadline().AsTime().Add(-r.s.cfg.ToolResultTimeout), ok)
	if !ok {
		log.Info("no tool result")
		r.s.metrics.toolCall(cctx, u.GetName(), outcomeNoResult)
		res := &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: noResultText(r.s.cfg.ToolResultTimeout.String())}
		return res, r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{
			Kind: agentv1.MetadataKind_METADATA_KIND_TOOL_RESULT, ToolCallId: u.GetId(), NoResult: true,
		}}})
	}
	hr := d.Result
	if hr == nil {
		hr = &hostv1.HostResult{}
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
	for _, img := range hr.GetImages() {
		res.Images = append(res.Images, &modelv1.ImageBlock{MimeType: img.GetMimeType(), Data: img.GetData()})
	}
	return res, r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{
		Kind: agentv1.MetadataKind_METADATA_KIND_TOOL_RESULT, ToolCallId: u.GetId(), ToolResult: hr,
	}}})
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
		if p := r.rs.GetPending(); p != nil && p.GetToolCall().GetToolCallId() == u.GetId() {
			got, err := r.decide(ctx, u, p)
			if err != nil {
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

// audit records the exact bytes that leave for the host: the model's script
// and the epilogue, each with its hash.
func (r *runner) audit(ctx context.Context, callID string, kind capabilityv1.ScriptKind, script string, epilogue *capabilityv1.StampedScript) error {
	if script == "" {
		return nil
	}
	now := timestamppb.New(r.s.now())
	entries := []*capabilityv1.Dispatch{{
		User: r.owner, SessionId: r.sessionID, RunId: r.runID, ToolCallId: callID, Kind: kind, DispatchTime: now,
		Stamp: &capabilityv1.StampedScript{HostApp: r.hostApp, CapabilityVersion: r.host.GetCapabilityVersion(), Code: script, Sha256: sha256Hex(script)},
	}}
	if epilogue != nil {
		entries = append(entries, &capabilityv1.Dispatch{
			User: r.owner, SessionId: r.sessionID, RunId: r.runID, ToolCallId: callID, Kind: capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, DispatchTime: now, Stamp: epilogue,
		})
	}
	if _, err := r.s.capability.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: entries}); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &runError{"capability_unavailable", fmt.Sprintf("record the dispatch of tool call %s in the audit log: %v", callID, status.Convert(err).Message()), true}
	}
	return nil
}
