package modelrouter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// anthropicVersion is the Messages API version the adapter speaks.
const anthropicVersion = "2023-06-01"

// anthropicAdapter speaks the Anthropic Messages API with streaming. The replay
// vendor uses it too, pointed at the loopback replay server.
type anthropicAdapter struct {
	vendor  string
	baseURL string
	apiKey  string
	http    *caller
}

type anthCache struct {
	Type string `json:"type"`
}

// ephemeral marks a prompt-cache breakpoint.
func ephemeral() *anthCache { return &anthCache{Type: "ephemeral"} }

type anthSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// anthBlock is one content block of a request, in every shape it can take.
type anthBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	Source       *anthSource     `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []anthBlock     `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	CacheControl *anthCache      `json:"cache_control,omitempty"`
}

type anthMessage struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anthCache      `json:"cache_control,omitempty"`
}

type anthThinking struct {
	Type         string `json:"type"`
	BudgetTokens int32  `json:"budget_tokens"`
}

type anthRequest struct {
	Model     string        `json:"model"`
	MaxTokens int32         `json:"max_tokens"`
	System    []anthBlock   `json:"system,omitempty"`
	Messages  []anthMessage `json:"messages"`
	Tools     []anthTool    `json:"tools,omitempty"`
	Thinking  *anthThinking `json:"thinking,omitempty"`
	Stream    bool          `json:"stream"`
}

func strp(s string) *string { return &s }

func anthImage(img *modelv1.ImageBlock) anthBlock {
	return anthBlock{Type: "image", Source: &anthSource{Type: "base64", MediaType: img.GetMimeType(), Data: base64.StdEncoding.EncodeToString(img.GetData())}}
}

// minThinkingBudget is the smallest thinking budget the API accepts.
const minThinkingBudget = 1024

// buildRequest renders the turn in the Messages API format with cache
// breakpoints on the system prompt, the last tool and the trailing message.
func (a *anthropicAdapter) buildRequest(t *turn) anthRequest {
	req := anthRequest{Model: t.entry.Name, MaxTokens: t.maxTokens, Stream: true}
	if t.system != "" {
		req.System = []anthBlock{{Type: "text", Text: strp(t.system), CacheControl: ephemeral()}}
	}
	for _, td := range t.tools {
		req.Tools = append(req.Tools, anthTool{Name: td.name, Description: td.description, InputSchema: td.schema})
	}
	if n := len(req.Tools); n > 0 {
		req.Tools[n-1].CacheControl = ephemeral()
	}
	for _, m := range t.messages {
		role := "user"
		if m.GetRole() == modelv1.Role_ROLE_ASSISTANT {
			role = "assistant"
		}
		blocks := anthBlocks(m)
		if len(blocks) == 0 {
			continue
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == role {
			req.Messages[n-1].Content = append(req.Messages[n-1].Content, blocks...)
			continue
		}
		req.Messages = append(req.Messages, anthMessage{Role: role, Content: blocks})
	}
	if n := len(req.Messages); n > 0 {
		last := req.Messages[n-1].Content
		for i := len(last) - 1; i >= 0; i-- {
			if last[i].Type != "thinking" && last[i].Type != "redacted_thinking" {
				last[i].CacheControl = ephemeral()
				break
			}
		}
	}
	if t.entry.has(modelv1.ModelFeature_MODEL_FEATURE_THINKING) && t.maxTokens > 2*minThinkingBudget && thinkingAllowed(req.Messages) {
		req.Thinking = &anthThinking{Type: "enabled", BudgetTokens: max(minThinkingBudget, t.maxTokens/2)}
	}
	return req
}

// thinkingAllowed reports whether extended thinking may be on: the API
// requires an assistant turn that called tools to start with its thinking, which
// is not the case when that turn came from another vendor.
func thinkingAllowed(msgs []anthMessage) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		calls := false
		for _, b := range msgs[i].Content {
			calls = calls || b.Type == "tool_use"
		}
		if !calls {
			return true
		}
		first := msgs[i].Content[0].Type
		return first == "thinking" || first == "redacted_thinking"
	}
	return true
}

// anthBlocks renders one message; tool results go first, as the API requires.
func anthBlocks(m *modelv1.Message) []anthBlock {
	var results, rest []anthBlock
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_Text:
			if v.Text.GetText() != "" {
				rest = append(rest, anthBlock{Type: "text", Text: strp(v.Text.GetText())})
			}
		case *modelv1.ContentBlock_Thinking:
			th := v.Thinking
			switch {
			case th.GetSignature() != "":
				rest = append(rest, anthBlock{Type: "thinking", Thinking: strp(th.GetText()), Signature: strp(th.GetSignature())})
			case th.GetEncrypted() != "":
				rest = append(rest, anthBlock{Type: "redacted_thinking", Data: th.GetEncrypted()})
			}
		case *modelv1.ContentBlock_ToolUse:
			rest = append(rest, anthBlock{Type: "tool_use", ID: v.ToolUse.GetId(), Name: v.ToolUse.GetName(), Input: json.RawMessage(v.ToolUse.GetInputJson())})
		case *modelv1.ContentBlock_ToolResult:
			tr := v.ToolResult
			content := []anthBlock{{Type: "text", Text: strp(orText(tr.GetText(), tr.GetIsError()))}}
			for _, img := range tr.GetImages() {
				content = append(content, anthImage(img))
			}
			results = append(results, anthBlock{Type: "tool_result", ToolUseID: tr.GetToolUseId(), Content: content, IsError: tr.GetIsError()})
		case *modelv1.ContentBlock_Image:
			rest = append(rest, anthImage(v.Image))
		case *modelv1.ContentBlock_Compaction:
			if v.Compaction.GetSummary() != "" {
				rest = append(rest, anthBlock{Type: "text", Text: strp(compactionText(v.Compaction))})
			}
		}
	}
	return append(results, rest...)
}

// orText keeps a tool result's text non-empty, which vendors require.
func orText(s string, isError bool) string {
	if s != "" {
		return s
	}
	if isError {
		return "(the tool failed without output)"
	}
	return "(no output)"
}

// anthBlockState accumulates one streamed content block.
type anthBlockState struct {
	kind      string
	text      strings.Builder
	signature string
	data      string
	id, name  string
	input     strings.Builder
}

type anthUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type anthEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		ID    string    `json:"id"`
		Model string    `json:"model"`
		Usage anthUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthUsage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a *anthropicAdapter) stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error) {
	headers := map[string]string{"x-api-key": a.apiKey, "anthropic-version": anthropicVersion}
	resp, err := a.http.post(ctx, a.vendor, a.baseURL+"/v1/messages", headers, a.buildRequest(t))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := newVendorStream(resp.Body)
	var blocks []*anthBlockState
	var usage anthUsage
	stop := ""
	for {
		ev, err := r.next()
		if err != nil {
			return nil, streamCut(a.vendor, err)
		}
		var e anthEvent
		if len(ev.Data) == 0 {
			continue
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return nil, &vendorError{Vendor: a.vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_STREAM, Message: fmt.Sprintf("decode %s event: %v", ev.Type, err)}
		}
		switch e.Type {
		case "message_start":
			usage = e.Message.Usage
			noteAnswer(ctx, e.Message.ID, e.Message.Model)
		case "content_block_start":
			for len(blocks) <= e.Index {
				blocks = append(blocks, &anthBlockState{})
			}
			cb := e.ContentBlock
			b := &anthBlockState{kind: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature, data: cb.Data}
			blocks[e.Index] = b
			switch cb.Type {
			case "text":
				b.text.WriteString(cb.Text)
				err = out.text(cb.Text)
			case "thinking":
				b.text.WriteString(cb.Thinking)
				err = out.thinking(cb.Thinking)
			}
		case "content_block_delta":
			if e.Index >= len(blocks) {
				return nil, &vendorError{Vendor: a.vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_STREAM, Message: fmt.Sprintf("delta for unknown content block %d", e.Index)}
			}
			b := blocks[e.Index]
			switch e.Delta.Type {
			case "text_delta":
				b.text.WriteString(e.Delta.Text)
				err = out.text(e.Delta.Text)
			case "thinking_delta":
				b.text.WriteString(e.Delta.Thinking)
				err = out.thinking(e.Delta.Thinking)
			case "signature_delta":
				b.signature += e.Delta.Signature
			case "input_json_delta":
				b.input.WriteString(e.Delta.PartialJSON)
				err = out.toolInput(b.id, b.name, e.Delta.PartialJSON)
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
			if u := e.Usage; u != nil {
				usage.OutputTokens = u.OutputTokens
				usage.InputTokens = max(usage.InputTokens, u.InputTokens)
				usage.CacheReadInputTokens = max(usage.CacheReadInputTokens, u.CacheReadInputTokens)
				usage.CacheCreationInputTokens = max(usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
			}
		case "message_stop":
			return a.end(t, blocks, usage, stop)
		case "error":
			code, retryable := streamErrorCode(e.Error.Type)
			return nil, &vendorError{Vendor: a.vendor, Code: code, Message: e.Error.Type + ": " + e.Error.Message, Retryable: retryable}
		}
		if err != nil {
			return nil, err
		}
	}
}

// end assembles the whole assistant message from the streamed blocks.
func (a *anthropicAdapter) end(t *turn, blocks []*anthBlockState, u anthUsage, stop string) (*modelv1.TurnEnd, error) {
	msg := &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT}
	for _, b := range blocks {
		switch b.kind {
		case "text":
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: b.text.String()}}})
		case "thinking":
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
				Text: b.text.String(), Signature: b.signature, Vendor: a.vendor, Model: t.entry.ID}}})
		case "redacted_thinking":
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
				Encrypted: b.data, Vendor: a.vendor, Model: t.entry.ID}}})
		case "tool_use":
			input := b.input.String()
			if strings.TrimSpace(input) == "" {
				input = "{}"
			}
			if !json.Valid([]byte(input)) {
				return nil, &vendorError{Vendor: a.vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_TOOL_INPUT, Message: fmt.Sprintf("tool call %s (%s) arguments are not valid JSON", b.id, b.name)}
			}
			msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{
				Id: b.id, Name: b.name, InputJson: input, Vendor: a.vendor, Model: t.entry.ID}}})
		}
	}
	return &modelv1.TurnEnd{
		Message:    msg,
		StopReason: anthStop(stop),
		Usage: &modelv1.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens},
	}, nil
}

func anthStop(s string) modelv1.StopReason {
	switch s {
	case "tool_use":
		return modelv1.StopReason_STOP_REASON_TOOL_USE
	case "max_tokens", "model_context_window_exceeded":
		return modelv1.StopReason_STOP_REASON_MAX_TOKENS
	case "refusal":
		return modelv1.StopReason_STOP_REASON_REFUSAL
	default:
		return modelv1.StopReason_STOP_REASON_END_TURN
	}
}
