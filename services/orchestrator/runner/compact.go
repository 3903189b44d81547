package runner

import (
	"context"
	"fmt"
	"io"
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/tool"
)

// keepRecent is how many trailing messages compaction keeps verbatim.
const keepRecent = 4

// summaryPrompt asks for the local summary that replaces earlier turns.
const summaryPrompt = "The conversation is about to be shortened. Write a summary of everything above that the rest of the work needs: " +
	"what the person asked for, what the document contains (names, levels, counts you learned), which scripts ran and whether they committed, " +
	"what is done and what is left. Write only the summary; call no tool."

// estimateTokens is a rough size of a transcript: four characters per token,
// and a flat cost per image.
func estimateTokens(system string, msgs []*modelv1.Message) int64 {
	n := int64(len(system))
	images := int64(0)
	for _, m := range msgs {
		for _, b := range m.GetContent() {
			switch {
			case b.GetText() != nil:
				n += int64(len(b.GetText().GetText()))
			case b.GetThinking() != nil:
				n += int64(len(b.GetThinking().GetText()))
			case b.GetToolUse() != nil:
				n += int64(len(b.GetToolUse().GetInputJson()))
			case b.GetToolResult() != nil:
				n += int64(len(b.GetToolResult().GetText()))
				images += int64(len(b.GetToolResult().GetImages()))
			case b.GetImage() != nil:
				images++
			case b.GetCompaction() != nil:
				n += int64(len(b.GetCompaction().GetSummary()))
			}
		}
	}
	return n/4 + images*1600
}

// maybeCompact summarises earlier turns when the transcript nears the model's
// context window. Vendors that compact server-side do it inside the turn (the
// router reports it); otherwise a local summary turn replaces everything
// before the recent turns, and the person sees a "context summarized" marker.
func (r *runner) maybeCompact(ctx context.Context) error {
	window := r.model.GetContextWindow()
	if window <= 0 || hasFeature(r.model, modelv1.ModelFeature_MODEL_FEATURE_COMPACTION) {
		return nil
	}
	if float64(estimateTokens(r.system, r.msgs)) < r.s.Cfg.CompactAt*float64(window) {
		return nil
	}
	// Cut before an assistant message, so the kept part follows the summary
	// (a user message) and no tool result is separated from its call.
	cut := -1
	for i := len(r.msgs) - keepRecent; i >= 2; i-- {
		if r.msgs[i].GetRole() == modelv1.Role_ROLE_ASSISTANT {
			cut = i
			break
		}
	}
	if cut < 0 {
		return nil
	}
	head := cloneMessages(r.msgs[:cut])
	last := head[len(head)-1]
	last.Content = append(last.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: summaryPrompt}}})
	summary, err := r.summarise(ctx, head)
	if err != nil {
		return err
	}
	kept := r.msgs[cut:]
	r.msgs = append([]*modelv1.Message{{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{
		{Block: &modelv1.ContentBlock_Compaction{Compaction: &modelv1.CompactionBlock{Summary: summary}}},
	}}}, kept...)
	if err := r.save(ctx); err != nil {
		return err
	}
	r.Log.Info("context summarized", "summarized_messages", cut, "kept_messages", len(kept))
	r.s.Metrics.Compaction(ctx, "local")
	return r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_ContextSummarized{ContextSummarized: &agentv1.ContextSummarized{Model: r.model.GetId(),
		Text: fmt.Sprintf("Context summarized: %d earlier messages were condensed into a summary; the last %d are kept as they were.", cut, len(kept))}}})
}

// summarise runs the local summary turn; it is not streamed to the person.
func (r *runner) summarise(ctx context.Context, msgs []*modelv1.Message) (string, error) {
	stream, err := streamTurn(ctx, r.s.Router, &modelv1.StreamTurnRequest{
		Model: r.model.GetId(), System: r.system, Messages: msgs, Tools: tool.Specs(),
		MaxTokens: int32(r.clampBudget(r.s.Cfg.LightMaxTokens)), SessionId: r.SessionID,
	})
	if err != nil {
		return "", r.routerErr(ctx, err)
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return "", &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, Message: "the summary turn ended without its end event", Retryable: true}
		}
		if err != nil {
			return "", r.routerErr(ctx, err)
		}
		if e := resp.GetError(); e != nil {
			return "", vendorFailure(e, "the summary turn failed: ")
		}
		if end := resp.GetEnd(); end != nil {
			addUsage(r.RS.Total, end.GetUsage())
			r.s.Metrics.Usage(ctx, r.model.GetId(), end.GetUsage())
			r.RS.Turns++
			text := strings.TrimSpace(messageText(end.GetMessage()))
			if text == "" {
				return "", &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, Message: "the summary turn returned no text", Retryable: true}
			}
			return text, nil
		}
	}
}
