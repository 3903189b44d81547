package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/enumname"
)

// toolCallRecord is one tool call of the run and what came back for it.
type toolCallRecord struct {
	call   *agentv1.ToolCall
	result *hostv1.HostResult
	none   bool
	// review says who approved or declined the call; declined, that the
	// person refused it.
	review   string
	declined bool
	// reason is why the person declined, when they did through this client.
	reason string
}

// runFollower reads one run's stream to its end, carries its tool calls to
// the paired host when there is one, and collects what the client is given.
type runFollower struct {
	*caller
	sessionID string
	p         *progress
	// req is the tool call being served; elicit, whether its client can put
	// a review to its person.
	req    *mcp.CallToolRequest
	elicit bool

	order   []string
	carried map[string]*toolCallRecord
	// sent holds the (tool call, result token) pairs already carried.
	sent    map[string]bool
	message strings.Builder
}

// follow streams the run. It answers the run's outcome; an error is a stream
// that broke (the run's own failure is an outcome, not an error).
func (r *runFollower) follow(ctx context.Context, req *agentv1.RunRequest) (RunOutput, error) {
	out := RunOutput{SessionID: r.sessionID, ToolCalls: []ToolCallOutcome{}}
	stream, err := r.cfg.Follow(ctx, req)
	if err != nil {
		return out, refused("start the run", err)
	}
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return out, fmt.Errorf("the run stream ended: %w", context.Cause(ctx))
			}
			return out, refused("the run stream broke", err)
		}
		if out.RunID == "" {
			out.RunID = c.GetRunId()
		}
		switch x := c.GetChunk().(type) {
		case *agentv1.StreamChunk_Metadata:
			r.metadata(x.Metadata, &out)
		case *agentv1.StreamChunk_Message:
			r.message.WriteString(x.Message.GetText())
		case *agentv1.StreamChunk_ToolCall:
			if err := r.toolCall(ctx, x.ToolCall); err != nil {
				return out, err
			}
			// Prose before a tool call explains the step; the final message
			// is what the model says after its last one.
			r.message.Reset()
		case *agentv1.StreamChunk_Complete:
			out.Message = x.Complete.GetText()
			out.StopReason = enumWord(x.Complete.GetStopReason().String(), "STOP_REASON_")
			r.p.say("run complete")
		case *agentv1.StreamChunk_Error:
			out.Error = fmt.Sprintf("%s: %s", enumWord(x.Error.GetCode().String(), "ERROR_CODE_"), x.Error.GetMessage())
			if x.Error.GetRetryable() {
				out.Error += " (running again is safe)"
			}
			r.p.say("run failed: " + out.Error)
		}
	}
	if out.Message == "" {
		out.Message = r.message.String()
	}
	if out.Message == "" && out.Error == "" {
		out.Error = "the run ended without a final message"
	}
	r.outcomes(&out)
	return out, nil
}

func (r *runFollower) metadata(m *agentv1.Metadata, out *RunOutput) {
	switch k := m.GetKind().(type) {
	case *agentv1.Metadata_RunStarted:
		out.Model = k.RunStarted.GetModel()
		r.p.say(fmt.Sprintf("run started: %s on %s", k.RunStarted.GetModel(), k.RunStarted.GetHostApp()))
	case *agentv1.Metadata_TurnStarted:
		r.p.say(fmt.Sprintf("model turn (%s)", enumWord(k.TurnStarted.GetPhase().String(), "PHASE_")))
	case *agentv1.Metadata_ToolResult:
		// A preview's result is not the call's outcome: nothing was kept,
		// and the call itself comes back for review.
		if k.ToolResult.GetPreview() {
			ch := k.ToolResult.GetResult().GetChanges()
			r.p.say(fmt.Sprintf("%s (it would add %d, modify %d and delete %d objects)", previewOutcome(k.ToolResult.GetResult()),
				len(ch.GetAdded()), len(ch.GetModified()), len(ch.GetDeleted())))
			return
		}
		rec := r.record(baseCallID(k.ToolResult.GetToolCallId()))
		if k.ToolResult.GetResult() != nil {
			rec.result = k.ToolResult.GetResult()
		}
		rec.none = k.ToolResult.GetNoResult()
		r.p.say("host result: " + describe(outcomeOf(rec)))
	case *agentv1.Metadata_ReviewDecided:
		verdict := "declined"
		rec := r.record(k.ReviewDecided.GetToolCallId())
		if k.ReviewDecided.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE {
			verdict = "approved"
			if k.ReviewDecided.GetEdited() {
				verdict = "approved with edits"
			}
		} else {
			rec.declined = true
		}
		rec.review = verdict + " by " + k.ReviewDecided.GetReviewer()
		if rec.declined && rec.reason != "" {
			rec.review += ": " + rec.reason
		}
		r.p.say(fmt.Sprintf("%s %s the script of %s", k.ReviewDecided.GetReviewer(), verdict, k.ReviewDecided.GetToolCallId()))
	case *agentv1.Metadata_ContextSummarized:
		r.sayText(k.ContextSummarized.GetText())
	case *agentv1.Metadata_Notice:
		r.sayText(k.Notice.GetText())
	case *agentv1.Metadata_ScriptLeft:
		r.sayText(k.ScriptLeft.GetText())
	case *agentv1.Metadata_HostWaiting:
		// A call this server carried already waits for nobody.
		id := k.HostWaiting.GetToolCallId()
		for key := range r.sent {
			if strings.HasPrefix(key, id+"\x00") {
				return
			}
		}
		text := k.HostWaiting.GetText()
		if rec := r.carried[baseCallID(id)]; rec != nil && rec.call != nil {
			text = toolName(rec.call) + ": " + text
		}
		r.sayText(text)
	case *agentv1.Metadata_TurnRetried:
		r.sayText(k.TurnRetried.GetText())
	case *agentv1.Metadata_TurnRestarted:
		r.sayText(k.TurnRestarted.GetText())
	}
}

func (r *runFollower) sayText(text string) {
	if text != "" {
		r.p.say(text)
	}
}

// enumWord is an enum value's name as the MCP tools have always shown it:
// lowercase, without the enum's prefix (execute_task_automation, end_turn).
func enumWord(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

// toolName is the tool's name as MCP clients see it.
func toolName(tc *agentv1.ToolCall) string {
	return enumWord(tc.GetToolName().String(), "TOOL_NAME_")
}

// record returns the record of a tool call, making it on first sight.
func (r *runFollower) record(id string) *toolCallRecord {
	rec, ok := r.carried[id]
	if !ok {
		rec = &toolCallRecord{}
		r.carried[id] = rec
		r.order = append(r.order, id)
	}
	return rec
}

// toolCall reports a dispatched call and, when this server is paired with
// the session's host, carries it there and submits the result. A call
// without a result token waits for a person's review and is never carried;
// the same call comes back with a token once approved. A (call, token) pair
// already carried is not carried again.
func (r *runFollower) toolCall(ctx context.Context, tc *agentv1.ToolCall) error {
	preview := tc.GetReview() == agentv1.ReviewState_REVIEW_STATE_PREVIEW
	if rec := r.record(baseCallID(tc.GetToolCallId())); !preview || rec.call == nil {
		rec.call = tc
	}
	name := toolName(tc)
	desc := tc.GetDescription()
	if desc == "" {
		desc = name
	}
	if tc.GetResultToken() == "" {
		return r.awaitReview(ctx, tc, name, desc)
	}
	key := tc.GetToolCallId() + "\x00" + tc.GetResultToken()
	if r.sent[key] {
		return nil
	}
	if tc.GetHostId() != "" {
		r.p.say(fmt.Sprintf("%s: %s; carried by linked host %s", name, desc, tc.GetHostId()))
		return nil
	}
	if !r.carries(ctx, tc.GetHostApp()) {
		r.p.say(fmt.Sprintf("%s: %s; waiting for a %s host to link, or for a client paired with a runtime that is not linked (the Nexus web UI or nexus run)", name, desc, tc.GetHostApp()))
		return nil
	}
	r.sent[key] = true
	if preview {
		r.p.say(fmt.Sprintf("%s previewed on the host: %s", name, desc))
	} else {
		r.p.say(fmt.Sprintf("%s on the host: %s", name, desc))
	}
	// A script on its way to the host finishes and its result is recorded
	// even when the client goes away meanwhile: the host would run it
	// anyway, and the run must know what it did before it is cancelled.
	hctx := context.WithoutCancel(ctx)
	res := r.carry(hctx, tc)
	if !preview {
		r.record(tc.GetToolCallId()).result = res
	}
	_, err := r.cfg.Orchestrator.SubmitToolResult(hctx, &agentv1.SubmitToolResultRequest{
		SessionId: r.sessionID, ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(), Result: res,
	})
	if err != nil {
		return refused("submit the host's result for "+tc.GetToolCallId(), err)
	}
	return nil
}

// baseCallID is the id of the model's tool call that call id carries out: a
// preview runs, and its result comes back, under an id of its own (the
// call's id, ".preview" and its number), and its outcome is the call's.
func baseCallID(id string) string {
	if base, _, ok := strings.Cut(id, ".preview"); ok {
		return base
	}
	return id
}

// carries says whether this server carries tool calls for hostApp: it is
// paired with a runtime, and that runtime serves hostApp.
func (s *service) carries(ctx context.Context, hostApp string) bool {
	if s.host == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pairedApp == "" {
		info, err := s.host.Info(ctx)
		if err != nil {
			// The runtime is paired but does not answer: carrying reports
			// that to the model as a host error rather than leaving the run
			// waiting for a result that never comes.
			s.cfg.Log.Warn("ask the paired host runtime which application it serves", "url", s.host.URL, "err", err)
			return true
		}
		s.pairedApp = info.GetHostApp()
	}
	return s.pairedApp == hostApp
}

// carry runs the call on the paired host. A host that cannot be reached or
// refuses is reported as the result's error, so the model sees what
// happened instead of the run waiting for a result that never comes.
func (r *runFollower) carry(ctx context.Context, tc *agentv1.ToolCall) *hostv1.HostResult {
	var (
		res *hostv1.HostResult
		err error
	)
	switch req := tc.GetHostRequest().(type) {
	case *agentv1.ToolCall_Execute:
		res, err = r.host.Execute(ctx, req.Execute)
	case *agentv1.ToolCall_ExportView:
		res, err = r.host.ExportView(ctx, req.ExportView)
	default:
		err = fmt.Errorf("tool call %s carries no host request", tc.GetToolCallId())
	}
	if err != nil {
		r.cfg.Log.Warn("carry a tool call to the paired host", "session", r.sessionID, "tool_call", tc.GetToolCallId(), "err", err)
		return &hostv1.HostResult{Error: &hostv1.ExecError{Type: enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_HOST_RUNTIME_ERROR), Condition: hostv1.ExecCondition_EXEC_CONDITION_HOST_RUNTIME_ERROR, Message: fmt.Sprintf("host runtime at %s: %v", r.host.URL, err)}}
	}
	return res
}
