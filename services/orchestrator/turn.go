package orchestrator

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

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
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
				return &agentv1.Complete{Text: messageText(last), StopReason: r.rs.GetStopReason()}, nil
			}
			if err := r.runTools(ctx, uses); err != nil {
				return nil, err
			}
			continue
		}
		if r.s.isDraining() {
			// A new turn starts on a replica that stays.
			r.suspendFor = 0
			return nil, errSuspended
		}
		if int(r.rs.GetTurns()) >= r.s.cfg.MaxTurns {
			return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_TURN_LIMIT, message: fmt.Sprintf("the run reached its limit of %d model turns (NEXUS_MAX_TURNS) without an answer; ask again with a narrower request", r.s.cfg.MaxTurns), retryable: false}
		}
		if err := r.maybeCompact(ctx); err != nil {
			return nil, err
		}
		sess := r.sess
		r.sess = nil
		if sess == nil {
			var err error
			if sess, err = retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.store.Get(ctx, r.sessionID) }); err != nil {
				return nil, r.stateErr(ctx, "read session", err)
			}
		}
		r.rs.InTurn = true
		r.rs.Results = nil
		if err := r.saveRun(ctx); err != nil {
			return nil, err
		}
		ph := resolvePhase(sess, r.rs.GetCapped())
		maxTokens := r.clampBudget(r.s.cfg.budget(ph))
		end, cutInTool, err := r.turn(ctx, ph, maxTokens)
		heavy := r.clampBudget(r.s.cfg.HeavyMaxTokens)
		if cutInTool && maxTokens < heavy && (errors.Is(err, errToolInputCut) || err == nil && end.GetStopReason() == modelv1.StopReason_STOP_REASON_MAX_TOKENS) {
			if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnRetried{TurnRetried: &agentv1.TurnRetried{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(heavy),
				Text: fmt.Sprintf("The %s turn ran out of its light output budget (%d tokens) in the middle of a tool call; it is redone once with the heavy budget (%d tokens).", ph, maxTokens, heavy)}}}); err != nil {
				return nil, err
			}
			end, _, err = r.turn(ctx, ph, heavy)
		}
		if err != nil {
			return nil, err
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
		r.rs.InTurn = false
		r.rs.StopReason = stopReasonEnum(end.GetStopReason())
		if err := r.saveRun(ctx); err != nil {
			return nil, err
		}
	}
}

// turn streams one model turn straight through to the client. cutInTool says
// whether the model was writing a tool call when the turn ended.
func (r *runner) turn(ctx context.Context, ph phase, maxTokens int) (*modelv1.TurnEnd, bool, error) {
	if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnStarted{TurnStarted: &agentv1.TurnStarted{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(maxTokens)}}}); err != nil {
		return nil, false, err
	}
	r.rs.Turns++
	tm := r.s.metrics.turnStarted(ctx, r.model.GetId())
	stream, err := r.s.router.StreamTurn(ctx, &modelv1.StreamTurnRequest{
		Model: r.model.GetId(), System: r.system, Messages: trimViews(r.msgs, viewsToRouter), Tools: toolSpecs(),
		MaxTokens: int32(maxTokens), SessionId: r.sessionID, AllowCompaction: hasFeature(r.model, modelv1.ModelFeature_MODEL_FEATURE_COMPACTION),
	})
	if err != nil {
		return nil, false, r.routerErr(ctx, err)
	}
	inTool := false
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil, false, &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, message: "the model-router ended the turn without its end event", retryable: true}
		}
		if err != nil {
			return nil, false, r.routerErr(ctx, err)
		}
		tm.event(ctx, resp)
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
				ToolCallId: d.GetToolCallId(), ToolName: toolNameEnum(d.GetToolName()), PartialJson: d.GetPartialJson(),
			}}}
		case *modelv1.StreamTurnResponse_Compacted:
			r.s.metrics.compaction(ctx, "vendor")
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ContextSummarized{
				ContextSummarized: &agentv1.ContextSummarized{Model: r.model.GetId(),
					Text: strings.TrimSpace("Context summarized by the model vendor. " + ev.Compacted.GetNote())},
			}}}}
		case *modelv1.StreamTurnResponse_Error:
			e := ev.Error
			if inTool && e.GetCode() == modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_TOOL_INPUT {
				// The output budget ran out in the middle of the tool call's JSON.
				return nil, true, fmt.Errorf("%w: %s", errToolInputCut, e.GetMessage())
			}
			return nil, false, vendorFailure(e, "the model turn failed: ")
		case *modelv1.StreamTurnResponse_End:
			end := ev.End
			addUsage(r.rs.Total, end.GetUsage())
			tm.ended(ctx, end.GetUsage())
			if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(end.GetUsage(), false)}}); err != nil {
				return nil, false, err
			}
			if inTool || len(toolUses(end.GetMessage())) > 0 {
				inTool = true
			}
			return end, inTool, nil
		}
		if c != nil {
			if err := r.emitFresh(ctx, c); err != nil {
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
	return &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, message: fmt.Sprintf("model turn through the model-router failed (%s): %s", st.Code(), st.Message()), retryable: retryable}
}

func hasFeature(m *modelv1.ModelInfo, f modelv1.ModelFeature) bool {
	return slices.Contains(m.GetFeatures(), f)
}

// appendPrompt adds the person's prompt to the transcript. Calls left without
// a result by an earlier run that died get one, and a trailing user message
// (results of a run that was cancelled) takes the prompt as well, so roles
// keep alternating.
func appendPrompt(msgs []*modelv1.Message, prompt string) []*modelv1.Message {
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
