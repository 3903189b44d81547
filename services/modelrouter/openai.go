package modelrouter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// openaiAdapter speaks the OpenAI Responses API with streaming, statelessly:
// store=false, and reasoning comes back encrypted so it can be echoed in place.
type openaiAdapter struct {
	baseURL string
	apiKey  string
	http    *caller
}

type oaiTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type oaiReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type oaiRequest struct {
	Model           string           `json:"model"`
	Instructions    string           `json:"instructions,omitempty"`
	Input           []map[string]any `json:"input"`
	Tools           []oaiTool        `json:"tools,omitempty"`
	MaxOutputTokens int32            `json:"max_output_tokens"`
	Reasoning       *oaiReasoning    `json:"reasoning,omitempty"`
	Include         []string         `json:"include,omitempty"`
	PromptCacheKey  string           `json:"prompt_cache_key,omitempty"`
	// ContextManagement turns on server-side compaction.
	ContextManagement []map[string]any `json:"context_management,omitempty"`
	Store             bool             `json:"store"`
	Stream            bool             `json:"stream"`
}

func dataURL(img *modelv1.ImageBlock) string {
	return "data:" + img.GetMimeType() + ";base64," + base64.StdEncoding.EncodeToString(img.GetData())
}

func (a *openaiAdapter) buildRequest(t *turn) oaiRequest {
	req := oaiRequest{
		Model: t.entry.Name, Instructions: t.system, MaxOutputTokens: t.maxTokens,
		PromptCacheKey: t.sessionID, Store: false, Stream: true, Input: []map[string]any{},
	}
	for _, td := range t.tools {
		req.Tools = append(req.Tools, oaiTool{Type: "function", Name: td.name, Description: td.description, Parameters: td.schema})
	}
	if t.entry.has(modelv1.ModelFeature_MODEL_FEATURE_THINKING) {
		req.Reasoning = &oaiReasoning{Effort: "medium", Summary: "auto"}
		req.Include = []string{"reasoning.encrypted_content"}
	}
	if t.allowCompaction && t.entry.has(modelv1.ModelFeature_MODEL_FEATURE_COMPACTION) {
		req.ContextManagement = []map[string]any{{"type": "compaction", "compact_threshold": compactThreshold(t.entry)}}
	}
	for _, m := range t.messages {
		if m.GetRole() == modelv1.Role_ROLE_ASSISTANT {
			req.Input = append(req.Input, oaiAssistantItems(m)...)
		} else {
			req.Input = append(req.Input, oaiUserItems(m, t.entry.VisionDetail)...)
		}
	}
	return req
}

// oaiUserItems renders a user message: tool outputs first (they must follow
// their calls), then the tools' images in a user message, since a function
// output carries text only, then the person's own content. Every image says
// the detail level its size was fitted for.
func oaiUserItems(m *modelv1.Message, detail string) []map[string]any {
	var items []map[string]any
	var toolImages, content []map[string]any
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_ToolResult:
			tr := v.ToolResult
			items = append(items, map[string]any{"type": "function_call_output", "call_id": tr.GetToolUseId(), "output": orText(tr.GetText(), tr.GetIsError())})
			if len(tr.GetImages()) > 0 {
				toolImages = append(toolImages, map[string]any{"type": "input_text", "text": fmt.Sprintf("Images returned by tool call %s:", tr.GetToolUseId())})
				for _, img := range tr.GetImages() {
					toolImages = append(toolImages, map[string]any{"type": "input_image", "image_url": dataURL(img), "detail": detail})
				}
			}
		case *modelv1.ContentBlock_Text:
			content = append(content, map[string]any{"type": "input_text", "text": v.Text.GetText()})
		case *modelv1.ContentBlock_Image:
			content = append(content, map[string]any{"type": "input_image", "image_url": dataURL(v.Image), "detail": detail})
		case *modelv1.ContentBlock_Compaction:
			if item := oaiCompaction(v.Compaction); item != nil {
				items = append(items, item)
			} else {
				content = append(content, map[string]any{"type": "input_text", "text": compactionText(v.Compaction)})
			}
		}
	}
	if len(toolImages) > 0 {
		items = append(items, map[string]any{"type": "message", "role": "user", "content": toolImages})
	}
	if len(content) > 0 {
		items = append(items, map[string]any{"type": "message", "role": "user", "content": content})
	}
	return items
}

// oaiAssistantItems renders an assistant message item by item, reasoning
// items in place so the model keeps its chain of thought across tool calls.
func oaiAssistantItems(m *modelv1.Message) []map[string]any {
	var items []map[string]any
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_Thinking:
			th := v.Thinking
			if th.GetEncrypted() == "" {
				continue
			}
			summary := []map[string]any{}
			if th.GetText() != "" {
				summary = append(summary, map[string]any{"type": "summary_text", "text": th.GetText()})
			}
			item := map[string]any{"type": "reasoning", "summary": summary, "encrypted_content": th.GetEncrypted()}
			if th.GetItemId() != "" {
				item["id"] = th.GetItemId()
			}
			items = append(items, item)
		case *modelv1.ContentBlock_Text:
			if v.Text.GetText() != "" {
				items = append(items, map[string]any{"type": "message", "role": "assistant", "content": v.Text.GetText()})
			}
		case *modelv1.ContentBlock_Compaction:
			if item := oaiCompaction(v.Compaction); item != nil {
				items = append(items, item)
			} else if v.Compaction.GetSummary() != "" {
				items = append(items, map[string]any{"type": "message", "role": "assistant", "content": compactionText(v.Compaction)})
			}
		case *modelv1.ContentBlock_ToolUse:
			tu := v.ToolUse
			item := map[string]any{"type": "function_call", "call_id": tu.GetId(), "name": tu.GetName(), "arguments": tu.GetInputJson()}
			if tu.GetItemId() != "" {
				item["id"] = tu.GetItemId()
			}
			items = append(items, item)
		}
	}
	return items
}

// oaiCompaction renders OpenAI's own compaction payload in place; a summary
// from anywhere else travels as text.
func oaiCompaction(c *modelv1.CompactionBlock) map[string]any {
	if c.GetVendor() != VendorOpenAI || c.GetEncrypted() == "" {
		return nil
	}
	return map[string]any{"type": "compaction", "encrypted_content": c.GetEncrypted()}
}

// compactThreshold is where server-side compaction starts: three quarters of
// the context window, leaving room for the turn itself.
func compactThreshold(m *ModelEntry) int64 { return m.ContextWindow * 3 / 4 }

// oaiItem is an output item as the stream reports it.
type oaiItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

type oaiResponse struct {
	ID                string `json:"id"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

type oaiEvent struct {
	Type         string       `json:"type"`
	OutputIndex  int          `json:"output_index"`
	SummaryIndex int          `json:"summary_index"`
	ItemID       string       `json:"item_id"`
	Delta        string       `json:"delta"`
	Item         *oaiItem     `json:"item"`
	Response     *oaiResponse `json:"response"`
	Code         string       `json:"code"`
	Message      string       `json:"message"`
}

// oaiItemState accumulates one output item while it streams.
type oaiItemState struct {
	item     oaiItem
	done     bool
	thinking strings.Builder
	text     strings.Builder
	args     strings.Builder
	parts    int
}

func (a *openaiAdapter) stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error) {
	headers := map[string]string{"Authorization": "Bearer " + a.apiKey}
	resp, err := a.http.post(ctx, VendorOpenAI, a.baseURL+"/responses", headers, a.buildRequest(t))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := newVendorStream(resp.Body)
	items := map[int]*oaiItemState{}
	get := func(i int) *oaiItemState {
		if items[i] == nil {
			items[i] = &oaiItemState{}
		}
		return items[i]
	}
	refused := false
	for {
		ev, err := r.next()
		if err != nil {
			return nil, streamCut(VendorOpenAI, err)
		}
		if len(ev.Data) == 0 || string(ev.Data) == "[DONE]" {
			continue
		}
		var e oaiEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return nil, &vendorError{Vendor: VendorOpenAI, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_STREAM, Message: fmt.Sprintf("decode %s event: %v", ev.Type, err)}
		}
		if e.Response != nil {
			noteAnswer(ctx, e.Response.ID, e.Response.Model)
		}
		switch e.Type {
		case "response.output_item.added":
			if e.Item != nil {
				get(e.OutputIndex).item = *e.Item
			}
		case "response.reasoning_summary_part.added":
			s := get(e.OutputIndex)
			if s.parts > 0 {
				s.thinking.WriteString("\n\n")
				err = out.thinking("\n\n")
			}
			s.parts++
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			get(e.OutputIndex).thinking.WriteString(e.Delta)
			err = out.thinking(e.Delta)
		case "response.output_text.delta":
			get(e.OutputIndex).text.WriteString(e.Delta)
			err = out.text(e.Delta)
		case "response.refusal.delta":
			refused = true
			get(e.OutputIndex).text.WriteString(e.Delta)
			err = out.text(e.Delta)
		case "response.function_call_arguments.delta":
			s := get(e.OutputIndex)
			s.args.WriteString(e.Delta)
			err = out.toolInput(s.item.CallID, s.item.Name, e.Delta)
		case "response.output_item.done":
			if e.Item != nil {
				s := get(e.OutputIndex)
				s.item, s.done = *e.Item, true
				if e.Item.Type == "compaction" {
					err = out.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Compacted{Compacted: &modelv1.Compacted{
						Note: "openai summarized the earlier context on the server"}}})
				}
			}
		case "response.completed", "response.incomplete":
			return a.end(t, items, e.Response, refused)
		case "response.failed":
			msg, code := "the response failed", ""
			if e.Response != nil && e.Response.Error != nil {
				msg, code = e.Response.Error.Message, e.Response.Error.Code
			}
			c, retryable := streamErrorCode(code)
			return nil, &vendorError{Vendor: VendorOpenAI, Code: c, Message: strings.TrimPrefix(code+": "+msg, ": "), Retryable: retryable}
		case "error":
			c, retryable := streamErrorCode(e.Code)
			return nil, &vendorError{Vendor: VendorOpenAI, Code: c, Message: strings.TrimPrefix(e.Code+": "+e.Message, ": "), Retryable: retryable}
		}
		if err != nil {
			return nil, err
		}
	}
}

func (a *openaiAdapter) end(t *turn, items map[int]*oaiItemState, r *oaiResponse, refused bool) (*modelv1.TurnEnd, error) {
	msg := &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT}
	calls := false
	idx := make([]int, 0, len(items))
	for i := range items {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		s := items[i]
		it := s.item
		switch it.Type {
		case "reasoning":
			text := s.thinking.String()
			if s.done && len(it.Summary) > 0 {
				parts := make([]string, 0, len(it.Summary))
				for _, p := range it.Summary {
					parts = append(parts, p.Text)
				}
				text = strings.Join(parts, "\n\n")
			}
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
				Text: text, Encrypted: it.EncryptedContent, ItemId: it.ID, Vendor: VendorOpenAI, Model: t.entry.ID}}})
		case "compaction":
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Compaction{Compaction: &modelv1.CompactionBlock{
				Encrypted: it.EncryptedContent, Vendor: VendorOpenAI}}})
		case "message":
			text := s.text.String()
			if s.done {
				var b strings.Builder
				for _, c := range it.Content {
					b.WriteString(c.Text)
					b.WriteString(c.Refusal)
				}
				text = b.String()
			}
			if text != "" {
				msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: text}}})
			}
		case "function_call":
			calls = true
			args := it.Arguments
			if !s.done || args == "" {
				args = s.args.String()
			}
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) {
				return nil, &vendorError{Vendor: VendorOpenAI, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_TOOL_INPUT, Message: fmt.Sprintf("tool call %s (%s) arguments are not valid JSON", it.CallID, it.Name)}
			}
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{
				Id: it.CallID, Name: it.Name, InputJson: args, ItemId: it.ID, Vendor: VendorOpenAI, Model: t.entry.ID}}})
		}
	}
	end := &modelv1.TurnEnd{Message: msg, StopReason: modelv1.StopReason_STOP_REASON_END_TURN, Usage: &modelv1.Usage{}}
	switch {
	case calls:
		end.StopReason = modelv1.StopReason_STOP_REASON_TOOL_USE
	case refused:
		end.StopReason = modelv1.StopReason_STOP_REASON_REFUSAL
	case r != nil && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		end.StopReason = modelv1.StopReason_STOP_REASON_MAX_TOKENS
	case r != nil && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter":
		end.StopReason = modelv1.StopReason_STOP_REASON_REFUSAL
	}
	if r != nil && r.Usage != nil {
		u := r.Usage
		cached := u.InputTokensDetails.CachedTokens
		end.Usage = &modelv1.Usage{InputTokens: u.InputTokens - cached, CacheReadTokens: cached,
			OutputTokens: u.OutputTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	}
	return end, nil
}
