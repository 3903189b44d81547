package modelrouter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// compatAdapter speaks OpenAI Chat Completions with streaming, the dialect
// Ollama, vLLM, llama.cpp and other compatible servers share.
type compatAdapter struct {
	baseURL string
	apiKey  string
	http    *caller
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []any          `json:"tools,omitempty"`
	MaxTokens     int32          `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions map[string]any `json:"stream_options"`
}

func (a *compatAdapter) buildRequest(t *turn) chatRequest {
	req := chatRequest{Model: t.entry.Name, MaxTokens: t.maxTokens, Stream: true, StreamOptions: map[string]any{"include_usage": true}}
	if t.system != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: t.system})
	}
	for _, td := range t.tools {
		req.Tools = append(req.Tools, map[string]any{"type": "function", "function": map[string]any{
			"name": td.name, "description": td.description, "parameters": td.schema}})
	}
	for _, m := range t.messages {
		if m.GetRole() == modelv1.Role_ROLE_ASSISTANT {
			if cm, ok := chatAssistant(m); ok {
				req.Messages = append(req.Messages, cm)
			}
			continue
		}
		req.Messages = append(req.Messages, chatUser(m, t.entry.VisionDetail)...)
	}
	return req
}

// chatAssistant renders a model turn; reasoning stays out, as compatible
// servers neither need nor accept it back.
func chatAssistant(m *modelv1.Message) (chatMessage, bool) {
	var text strings.Builder
	cm := chatMessage{Role: "assistant"}
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_Text:
			text.WriteString(v.Text.GetText())
		case *modelv1.ContentBlock_Compaction:
			if v.Compaction.GetSummary() != "" {
				text.WriteString(compactionText(v.Compaction))
			}
		case *modelv1.ContentBlock_ToolUse:
			var tc chatToolCall
			tc.ID, tc.Type = v.ToolUse.GetId(), "function"
			tc.Function.Name, tc.Function.Arguments = v.ToolUse.GetName(), v.ToolUse.GetInputJson()
			cm.ToolCalls = append(cm.ToolCalls, tc)
		}
	}
	if text.Len() > 0 {
		cm.Content = text.String()
	}
	return cm, text.Len() > 0 || len(cm.ToolCalls) > 0
}

// chatImage is an image_url part's value, with the detail level the image
// was fitted for when the catalog names one.
func chatImage(img *modelv1.ImageBlock, detail string) map[string]any {
	u := map[string]any{"url": dataURL(img)}
	if detail != "" {
		u["detail"] = detail
	}
	return u
}

// chatUser renders a user turn: one role "tool" message per result, the
// results' images in a following user message, then the person's content.
func chatUser(m *modelv1.Message, detail string) []chatMessage {
	var out []chatMessage
	var images, parts []map[string]any
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_ToolResult:
			tr := v.ToolResult
			out = append(out, chatMessage{Role: "tool", ToolCallID: tr.GetToolUseId(), Content: orText(tr.GetText(), tr.GetIsError())})
			if len(tr.GetImages()) > 0 {
				images = append(images, map[string]any{"type": "text", "text": fmt.Sprintf("Images returned by tool call %s:", tr.GetToolUseId())})
				for _, img := range tr.GetImages() {
					images = append(images, map[string]any{"type": "image_url", "image_url": chatImage(img, detail)})
				}
			}
		case *modelv1.ContentBlock_Text:
			parts = append(parts, map[string]any{"type": "text", "text": v.Text.GetText()})
		case *modelv1.ContentBlock_Image:
			parts = append(parts, map[string]any{"type": "image_url", "image_url": chatImage(v.Image, detail)})
		case *modelv1.ContentBlock_Compaction:
			if v.Compaction.GetSummary() != "" {
				parts = append(parts, map[string]any{"type": "text", "text": compactionText(v.Compaction)})
			}
		}
	}
	if len(images) > 0 {
		out = append(out, chatMessage{Role: "user", Content: images})
	}
	if len(parts) == 1 && parts[0]["type"] == "text" {
		out = append(out, chatMessage{Role: "user", Content: parts[0]["text"]})
	} else if len(parts) > 0 {
		out = append(out, chatMessage{Role: "user", Content: parts})
	}
	return out
}

type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			Reasoning        string `json:"reasoning"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

type chatCallState struct {
	id, name string
	args     strings.Builder
}

func (a *compatAdapter) stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error) {
	headers := map[string]string{}
	if a.apiKey != "" {
		headers["Authorization"] = "Bearer " + a.apiKey
	}
	resp, err := a.http.post(ctx, VendorCompat, strings.TrimRight(a.baseURL, "/")+"/chat/completions", headers, a.buildRequest(t))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := newVendorStream(resp.Body)
	var thinking, text strings.Builder
	calls := map[int]*chatCallState{}
	end := &modelv1.TurnEnd{Usage: &modelv1.Usage{}}
	finish := ""
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) && finish != "" {
			break
		}
		if err != nil {
			return nil, streamCut(VendorCompat, err)
		}
		if string(ev.Data) == "[DONE]" {
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		var c chatChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return nil, &vendorError{Vendor: VendorCompat, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_STREAM, Message: fmt.Sprintf("decode chunk: %v", err)}
		}
		noteAnswer(ctx, c.ID, c.Model)
		if c.Error != nil {
			code, retryable := streamErrorCode(c.Error.Type)
			return nil, &vendorError{Vendor: VendorCompat, Code: code, Message: c.Error.Message, Retryable: retryable}
		}
		if u := c.Usage; u != nil {
			var cached, reasoning int64
			if u.PromptTokensDetails != nil {
				cached = u.PromptTokensDetails.CachedTokens
			}
			if u.CompletionTokensDetails != nil {
				reasoning = u.CompletionTokensDetails.ReasoningTokens
			}
			end.Usage = &modelv1.Usage{InputTokens: u.PromptTokens - cached, CacheReadTokens: cached, OutputTokens: u.CompletionTokens, ReasoningTokens: reasoning}
		}
		for _, ch := range c.Choices[:min(1, len(c.Choices))] {
			d := ch.Delta
			r := d.Reasoning + d.ReasoningContent
			thinking.WriteString(r)
			if err := out.thinking(r); err != nil {
				return nil, err
			}
			text.WriteString(d.Content)
			if err := out.text(d.Content); err != nil {
				return nil, err
			}
			for _, tc := range d.ToolCalls {
				s := calls[tc.Index]
				if s == nil {
					s = &chatCallState{}
					calls[tc.Index] = s
				}
				if tc.ID != "" {
					s.id = tc.ID
				}
				if s.id == "" {
					s.id = newCallID()
				}
				s.name += tc.Function.Name
				s.args.WriteString(tc.Function.Arguments)
				if err := out.toolInput(s.id, s.name, tc.Function.Arguments); err != nil {
					return nil, err
				}
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	msg := &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT}
	if thinking.Len() > 0 {
		msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
			Text: thinking.String(), Vendor: VendorCompat, Model: t.entry.ID}}})
	}
	if text.Len() > 0 {
		msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: text.String()}}})
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		s := calls[i]
		args := s.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			return nil, &vendorError{Vendor: VendorCompat, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_TOOL_INPUT, Message: fmt.Sprintf("tool call %s (%s) arguments are not valid JSON", s.id, s.name)}
		}
		msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{
			Id: s.id, Name: s.name, InputJson: args, Vendor: VendorCompat, Model: t.entry.ID}}})
	}
	end.Message = msg
	switch {
	case len(calls) > 0:
		end.StopReason = modelv1.StopReason_STOP_REASON_TOOL_USE
	case finish == "length":
		end.StopReason = modelv1.StopReason_STOP_REASON_MAX_TOKENS
	case finish == "content_filter":
		end.StopReason = modelv1.StopReason_STOP_REASON_REFUSAL
	default:
		end.StopReason = modelv1.StopReason_STOP_REASON_END_TURN
	}
	return end, nil
}
