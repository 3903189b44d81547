package runner

// This file runs the model: the loop of turns, one streamed turn, and reading what it returned.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/tool"
)

// loop is the agentic loop: stream a turn; no tool call means complete;
// otherwise run the tools, append the assistant turn and the results, and go
// again. The transcript is the state machine, so the loop starts wherever
// the saved transcript says the run is.
func (r *runner) loop(ctx context.Context) (*agentv1.Complete, error) {
	for {
		if n := len(r.msgs); n > 0 && r.msgs[n-1].GetRole() == modelv1.Role_ROLE_ASSISTANT {
			last := r.msgs[n-1]
			uses := toolUses(last)
			if len(uses) == 0 {
				return &agentv1.Complete{Text: messageText(last), StopReason: r.RS.GetStopReason()}, nil
			}
			if err := r.runTools(ctx, uses); err != nil {
				return nil, err
			}
			continue
		}
		if r.s.IsDraining() {
			// A new turn starts on a replica that stays.
			r.SuspendFor = 0
			return nil, r.flushed(ctx, call.ErrSuspended)
		}
		if int(r.RS.GetTurns()) >= r.s.Cfg.MaxTurns {
			return nil, r.flushed(ctx, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_TURN_LIMIT, Message: fmt.Sprintf("the run reached its limit of %d model turns (NEXUS_MAX_TURNS) without an answer; ask again with a narrower request", r.s.Cfg.MaxTurns), Retryable: false})
		}
		if err := r.maybeCompact(ctx); err != nil {
			return nil, r.flushed(ctx, err)
		}
		sess := r.Sess
		r.Sess = nil
		if sess == nil {
			var err error
			if sess, err = state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.Store.Get(ctx, r.SessionID) }); err != nil {
				return nil, r.flushed(ctx, r.StateErr(ctx, "read session", err))
			}
		}
		r.RS.InTurn = true
		r.RS.Results = nil
		ph := resolvePhase(sess, r.RS.GetCapped())
		maxTokens := r.clampBudget(budget(r.s.Cfg, ph))
		end, cutInTool, err := r.turn(ctx, ph, maxTokens, true)
		heavy := r.clampBudget(r.s.Cfg.HeavyMaxTokens)
		if cutInTool && maxTokens < heavy && (errors.Is(err, errToolInputCut) || err == nil && end.GetStopReason() == modelv1.StopReason_STOP_REASON_MAX_TOKENS) {
			if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnRetried{TurnRetried: &agentv1.TurnRetried{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(heavy),
				Text: fmt.Sprintf("The %s turn ran out of its light output budget (%d tokens) in the middle of a tool call; it is redone once with the heavy budget (%d tokens).", ph, maxTokens, heavy)}}}); err != nil {
				return nil, err
			}
			end, _, err = r.turn(ctx, ph, heavy, false)
		}
		if err != nil {
			return nil, r.flushed(ctx, err)
		}
		msg := end.GetMessage()
		if msg == nil {
			msg = &modelv1.Message{}
		}
		msg.Role = modelv1.Role_ROLE_ASSISTANT
		r.msgs = append(r.msgs, msg)
		if err := r.save(ctx); err != nil {
			return nil, err
		}
		r.RS.InTurn = false
		r.RS.StopReason = stopReasonEnum(end.GetStopReason())
		if err := r.SaveRun(ctx); err != nil {
			return nil, err
		}
	}
}

// turn streams one model turn straight through to the client. cutInTool says
// whether the model was writing a tool call when the turn ended. save says
// the run's state (and the transcript, when it is behind) is saved first.
func (r *runner) turn(ctx context.Context, ph phase, maxTokens int, save bool) (*modelv1.TurnEnd, bool, error) {
	if err := r.startTurn(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnStarted{TurnStarted: &agentv1.TurnStarted{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(maxTokens)}}}, save); err != nil {
		return nil, false, err
	}
	r.RS.Turns++
	tm := r.s.Metrics.TurnStarted(ctx, r.model.GetId())
	stream, err := streamTurn(ctx, r.s.Router, &modelv1.StreamTurnRequest{
		Model: r.model.GetId(), System: r.system, Messages: trimViews(r.msgs, viewsToRouter), Tools: tool.Specs(),
		MaxTokens: int32(maxTokens), SessionId: r.SessionID, AllowCompaction: hasFeature(r.model, modelv1.ModelFeature_MODEL_FEATURE_COMPACTION),
	})
	if err != nil {
		return nil, false, r.routerErr(ctx, err)
	}
	inTool := false
	// The deltas of one message from the router go to the log in one
	// append, as soon as the message's last is read: nothing waits for a
	// later message, so a lone delta is appended alone, at once.
	var deltas []*agentv1.StreamChunk
	flush := func() error {
		if len(deltas) == 0 {
			return nil
		}
		err := r.EmitFresh(ctx, deltas...)
		deltas = nil
		return err
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil, false, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, Message: "the model-router ended the turn without its end event", Retryable: true}
		}
		if err != nil {
			return nil, false, r.routerErr(ctx, err)
		}
		tm.Event(ctx, resp)
		var c *agentv1.StreamChunk
		switch ev := resp.GetEvent().(type) {
		case *modelv1.StreamTurnResponse_Thinking:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: ev.Thinking.GetText()}}}
		case *modelv1.StreamTurnResponse_Text:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: ev.Text.GetText()}}}
		case *modelv1.StreamTurnResponse_ToolInputDelta:
			inTool = true
			d := ev.ToolInputDelta
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{
				ToolCallId: d.GetToolCallId(), ToolName: tool.NameEnum(d.GetToolName()), PartialJson: d.GetPartialJson(),
			}}}
		case *modelv1.StreamTurnResponse_Compacted:
			r.s.Metrics.Compaction(ctx, "vendor")
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ContextSummarized{
				ContextSummarized: &agentv1.ContextSummarized{Model: r.model.GetId(),
					Text: strings.TrimSpace("Context summarized by the model vendor. " + ev.Compacted.GetNote())},
			}}}}
		case *modelv1.StreamTurnResponse_Error:
			if err := flush(); err != nil {
				return nil, false, err
			}
			e := ev.Error
			if inTool && e.GetCode() == modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_TOOL_INPUT {
				// The output budget ran out in the middle of the tool call's JSON.
				return nil, true, fmt.Errorf("%w: %s", errToolInputCut, e.GetMessage())
			}
			return nil, false, vendorFailure(e, "the model turn failed: ")
		case *modelv1.StreamTurnResponse_End:
			if err := flush(); err != nil {
				return nil, false, err
			}
			end := ev.End
			addUsage(r.RS.Total, end.GetUsage())
			tm.Ended(ctx, end.GetUsage())
			if err := r.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(end.GetUsage(), false)}}); err != nil {
				return nil, false, err
			}
			if inTool || len(toolUses(end.GetMessage())) > 0 {
				inTool = true
			}
			return end, inTool, nil
		}
		if c != nil {
			deltas = append(deltas, c)
		}
		if stream.Waiting() == 0 {
			if err := flush(); err != nil {
				return nil, false, err
			}
		}
	}
}

func (r *runner) routerErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	st := status.Convert(err)
	retryable := st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted || st.Code() == codes.DeadlineExceeded
	return &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, Message: fmt.Sprintf("model turn through the model-router failed (%s): %s", st.Code(), st.Message()), Retryable: retryable}
}

func hasFeature(m *modelv1.ModelInfo, f modelv1.ModelFeature) bool {
	return slices.Contains(m.GetFeatures(), f)
}

// AppendPrompt adds the person's prompt to the transcript. Calls left without
// a result by an earlier run that died get one, and a trailing user message
// (results of a run that was cancelled) takes the prompt as well, so roles
// keep alternating.
func AppendPrompt(msgs []*modelv1.Message, prompt string) []*modelv1.Message {
	text := &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: prompt}}}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_ASSISTANT {
		if uses := toolUses(msgs[n-1]); len(uses) > 0 {
			m := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
			for _, u := range uses {
				m.Content = append(m.Content, toolResult(&modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
					Text: unansweredText}))
			}
			msgs = append(msgs, m)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_USER {
		msgs[n-1].Content = append(msgs[n-1].Content, text)
		return msgs
	}
	return append(msgs, &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{text}})
}

func toolUses(m *modelv1.Message) []*modelv1.ToolUseBlock {
	var out []*modelv1.ToolUseBlock
	for _, b := range m.GetContent() {
		if u := b.GetToolUse(); u != nil {
			out = append(out, u)
		}
	}
	return out
}

func messageText(m *modelv1.Message) string {
	var parts []string
	for _, b := range m.GetContent() {
		if t := b.GetText(); t != nil {
			parts = append(parts, t.GetText())
		}
	}
	return strings.Join(parts, "")
}

func toolResult(b *modelv1.ToolResultBlock) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolResult{ToolResult: b}}
}

// viewsToRouter is how many rendered views (tool-result images) a turn
// sends the model-router at most, newest first. The router keeps fewer still
// for the vendor (NEXUS_IMAGE_HISTORY); this bound keeps the request to the
// router from growing with every view a long session made.
const viewsToRouter = 8

// trimViews returns msgs with the images of tool results beyond the newest
// keep views replaced by a note. Messages it changes are copies; the
// transcript keeps every view.
func trimViews(msgs []*modelv1.Message, keep int) []*modelv1.Message {
	seen := 0
	out := msgs
	copied := false
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].GetContent()) - 1; j >= 0; j-- {
			tr := msgs[i].GetContent()[j].GetToolResult()
			n := len(tr.GetImages())
			if n == 0 {
				continue
			}
			k := max(0, min(n, keep-seen))
			seen += n
			if k == n {
				continue
			}
			if !copied {
				out = slices.Clone(msgs)
				copied = true
			}
			m := proto.Clone(out[i]).(*modelv1.Message)
			r := m.GetContent()[j].GetToolResult()
			r.Images = r.Images[n-k:]
			r.Text += fmt.Sprintf("\n\n[%d earlier rendered view(s) of this result omitted: only the newest views of the conversation are sent.]", n-k)
			out[i] = m
		}
	}
	return out
}
