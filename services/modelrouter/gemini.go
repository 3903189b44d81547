package modelrouter

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// geminiSkipSignature is the value Gemini documents for function calls that
// did not come from Gemini (a conversation moved here from another vendor);
// Gemini 3 rejects a current-turn call without any signature.
const geminiSkipSignature = "skip_thought_signature_validator"

// geminiAdapter speaks the Gemini API's streamGenerateContent with SSE.
type geminiAdapter struct {
	baseURL string
	apiKey  string
	http    *caller
}

type gemContent struct {
	Role  string           `json:"role,omitempty"`
	Parts []map[string]any `json:"parts"`
}

type gemRequest struct {
	SystemInstruction *gemContent    `json:"systemInstruction,omitempty"`
	Contents          []gemContent   `json:"contents"`
	Tools             []any          `json:"tools,omitempty"`
	GenerationConfig  map[string]any `json:"generationConfig"`
}

func gemInline(img *modelv1.ImageBlock) map[string]any {
	return map[string]any{"inlineData": map[string]any{"mimeType": img.GetMimeType(), "data": base64.StdEncoding.EncodeToString(img.GetData())}}
}

func (a *geminiAdapter) buildRequest(t *turn) gemRequest {
	req := gemRequest{Contents: []gemContent{}, GenerationConfig: map[string]any{"maxOutputTokens": t.maxTokens}}
	if t.system != "" {
		req.SystemInstruction = &gemContent{Parts: []map[string]any{{"text": t.system}}}
	}
	if t.entry.has(modelv1.ModelFeature_MODEL_FEATURE_THINKING) {
		req.GenerationConfig["thinkingConfig"] = map[string]any{"includeThoughts": true}
	}
	if r := t.entry.MediaResolution; r != "" {
		req.GenerationConfig["mediaResolution"] = "MEDIA_RESOLUTION_" + strings.ToUpper(r)
	}
	if len(t.tools) > 0 {
		decls := make([]map[string]any, 0, len(t.tools))
		for _, td := range t.tools {
			decls = append(decls, map[string]any{"name": td.name, "description": td.description, "parametersJsonSchema": td.schema})
		}
		req.Tools = []any{map[string]any{"functionDeclarations": decls}}
	}
	names := toolNames(t.messages)
	vendorIDs := map[string]string{}
	for _, m := range t.messages {
		for _, b := range m.GetContent() {
			if tu := b.GetToolUse(); tu != nil && tu.GetItemId() != "" {
				vendorIDs[tu.GetId()] = tu.GetItemId()
			}
		}
	}
	gemini3 := strings.HasPrefix(t.entry.Name, "gemini-3")
	for _, m := range t.messages {
		var c gemContent
		if m.GetRole() == modelv1.Role_ROLE_ASSISTANT {
			c = gemContent{Role: "model", Parts: gemModelParts(m, gemini3)}
		} else {
			c = gemContent{Role: "user", Parts: gemUserParts(m, names, vendorIDs)}
		}
		if len(c.Parts) == 0 {
			continue
		}
		if n := len(req.Contents); n > 0 && req.Contents[n-1].Role == c.Role {
			req.Contents[n-1].Parts = append(req.Contents[n-1].Parts, c.Parts...)
			continue
		}
		req.Contents = append(req.Contents, c)
	}
	return req
}

// gemModelParts renders a model turn with every thoughtSignature on the part
// it arrived on.
func gemModelParts(m *modelv1.Message, gemini3 bool) []map[string]any {
	var parts []map[string]any
	signedCall := false
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_Thinking:
			th := v.Thinking
			switch {
			case th.GetSignature() == "":
			case th.GetText() != "":
				parts = append(parts, map[string]any{"text": th.GetText(), "thought": true, "thoughtSignature": th.GetSignature()})
			case len(parts) > 0 && parts[len(parts)-1]["thoughtSignature"] == nil:
				// A signature Gemini put on a prose part rides on that part again.
				parts[len(parts)-1]["thoughtSignature"] = th.GetSignature()
			}
		case *modelv1.ContentBlock_Text:
			if v.Text.GetText() != "" {
				parts = append(parts, map[string]any{"text": v.Text.GetText()})
			}
		case *modelv1.ContentBlock_Compaction:
			if v.Compaction.GetSummary() != "" {
				parts = append(parts, map[string]any{"text": compactionText(v.Compaction)})
			}
		case *modelv1.ContentBlock_ToolUse:
			tu := v.ToolUse
			call := map[string]any{"name": tu.GetName(), "args": json.RawMessage(tu.GetInputJson())}
			if tu.GetItemId() != "" {
				call["id"] = tu.GetItemId()
			}
			part := map[string]any{"functionCall": call}
			switch {
			case tu.GetSignature() != "":
				part["thoughtSignature"] = tu.GetSignature()
				signedCall = true
			case gemini3 && !signedCall && tu.GetVendor() != VendorGemini:
				part["thoughtSignature"] = geminiSkipSignature
				signedCall = true
			}
			parts = append(parts, part)
		}
	}
	return parts
}

// gemUserParts renders a user turn: function responses first, then the
// tools' images as inline data, then the person's own content.
func gemUserParts(m *modelv1.Message, names, vendorIDs map[string]string) []map[string]any {
	var responses, images, rest []map[string]any
	for _, b := range m.GetContent() {
		switch v := b.GetBlock().(type) {
		case *modelv1.ContentBlock_ToolResult:
			tr := v.ToolResult
			name := tr.GetName()
			if name == "" {
				name = names[tr.GetToolUseId()]
			}
			key := "output"
			if tr.GetIsError() {
				key = "error"
			}
			fr := map[string]any{"name": name, "response": map[string]any{key: orText(tr.GetText(), tr.GetIsError())}}
			if id := vendorIDs[tr.GetToolUseId()]; id != "" {
				fr["id"] = id
			}
			responses = append(responses, map[string]any{"functionResponse": fr})
			if len(tr.GetImages()) > 0 {
				images = append(images, map[string]any{"text": fmt.Sprintf("Images returned by %s:", name)})
				for _, img := range tr.GetImages() {
					images = append(images, gemInline(img))
				}
			}
		case *modelv1.ContentBlock_Text:
			if v.Text.GetText() != "" {
				rest = append(rest, map[string]any{"text": v.Text.GetText()})
			}
		case *modelv1.ContentBlock_Image:
			rest = append(rest, gemInline(v.Image))
		case *modelv1.ContentBlock_Compaction:
			if v.Compaction.GetSummary() != "" {
				rest = append(rest, map[string]any{"text": compactionText(v.Compaction)})
			}
		}
	}
	return append(append(responses, images...), rest...)
}

type gemPart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature string `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

type gemChunk struct {
	ResponseID   string `json:"responseId"`
	ModelVersion string `json:"modelVersion"`
	Candidates   []struct {
		Content struct {
			Parts []gemPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func (a *geminiAdapter) stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error) {
	u := fmt.Sprintf("%s/v1beta/models/%s:streamGenerateContent?alt=sse", a.baseURL, url.PathEscape(t.entry.Name))
	resp, err := a.http.post(ctx, VendorGemini, u, map[string]string{"x-goog-api-key": a.apiKey}, a.buildRequest(t))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := newVendorStream(resp.Body)
	msg := &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT}
	end := &modelv1.TurnEnd{Message: msg, StopReason: modelv1.StopReason_STOP_REASON_END_TURN, Usage: &modelv1.Usage{}}
	var last *modelv1.ContentBlock // the block streamed parts are appended to
	calls, finish := false, ""
	for {
		ev, err := r.next()
		if err != nil {
			if errors.Is(err, io.EOF) && finish != "" {
				break
			}
			return nil, streamCut(VendorGemini, err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		var c gemChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return nil, &vendorError{Vendor: VendorGemini, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_BAD_STREAM, Message: fmt.Sprintf("decode chunk: %v", err)}
		}
		noteAnswer(ctx, c.ResponseID, c.ModelVersion)
		if c.Error != nil {
			code, retryable := streamErrorCode(strings.ToLower(c.Error.Status))
			return nil, &vendorError{Vendor: VendorGemini, Code: code, Message: c.Error.Status + ": " + c.Error.Message, Retryable: retryable}
		}
		if c.UsageMetadata != nil {
			um := c.UsageMetadata
			end.Usage = &modelv1.Usage{InputTokens: um.PromptTokenCount - um.CachedContentTokenCount, CacheReadTokens: um.CachedContentTokenCount,
				OutputTokens: um.CandidatesTokenCount + um.ThoughtsTokenCount, ReasoningTokens: um.ThoughtsTokenCount}
		}
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			finish = "SAFETY"
		}
		for _, cand := range c.Candidates[:min(1, len(c.Candidates))] {
			for _, p := range cand.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					calls = true
					args := strings.TrimSpace(string(p.FunctionCall.Args))
					if args == "" || args == "null" {
						args = "{}"
					}
					id := p.FunctionCall.ID
					if id == "" {
						id = newCallID()
					}
					tu := &modelv1.ToolUseBlock{Id: id, Name: p.FunctionCall.Name, InputJson: args, Signature: p.ThoughtSignature,
						ItemId: p.FunctionCall.ID, Vendor: VendorGemini, Model: t.entry.ID}
					msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: tu}})
					last = nil
					// Gemini sends a call whole, so its arguments are one delta.
					err = out.toolInput(id, tu.Name, args)
				case p.Thought:
					if th := last.GetThinking(); th != nil && th.Signature == "" {
						th.Text += p.Text
						th.Signature = p.ThoughtSignature
					} else {
						last = &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
							Text: p.Text, Signature: p.ThoughtSignature, Vendor: VendorGemini, Model: t.entry.ID}}}
						msg.Content = append(msg.Content, last)
					}
					err = out.thinking(p.Text)
				default:
					if tb := last.GetText(); tb != nil {
						tb.Text += p.Text
					} else if p.Text != "" {
						last = &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: p.Text}}}
						msg.Content = append(msg.Content, last)
					}
					if p.ThoughtSignature != "" {
						// The signature belongs to the prose part; a bare signed
						// thinking block after it carries it back there.
						msg.Content = append(msg.Content, &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{
							Signature: p.ThoughtSignature, Vendor: VendorGemini, Model: t.entry.ID}}})
						last = nil
					}
					err = out.text(p.Text)
				}
				if err != nil {
					return nil, err
				}
			}
			if cand.FinishReason != "" {
				finish = cand.FinishReason
			}
		}
	}
	switch {
	case calls:
		end.StopReason = modelv1.StopReason_STOP_REASON_TOOL_USE
	case finish == "MAX_TOKENS":
		end.StopReason = modelv1.StopReason_STOP_REASON_MAX_TOKENS
	case finish == "SAFETY" || finish == "RECITATION" || finish == "PROHIBITED_CONTENT" || finish == "BLOCKLIST" || finish == "SPII":
		end.StopReason = modelv1.StopReason_STOP_REASON_REFUSAL
	}
	return end, nil
}

// newCallID names a Gemini function call that came without an id; the
// transcript needs one to pair the call with its result.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
