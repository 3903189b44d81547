package orchestratortest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"nexus.local/services/modelrouter/replay"
)

// Block is one content block of a scripted model turn.
type Block struct {
	// Thinking is reasoning text, streamed as thinking_delta events.
	Thinking string
	// Text is prose, streamed as text_delta events.
	Text string
	// ToolID, ToolName and ToolInput make a tool_use block whose JSON input is
	// streamed in several input_json_delta pieces.
	ToolID, ToolName, ToolInput string
	// CutToolInput stops the tool input halfway, as when the output budget
	// runs out in the middle of a tool call.
	CutToolInput bool
}

// Thinking returns a thinking block.
func Thinking(s string) Block { return Block{Thinking: s} }

// Text returns a text block.
func Text(s string) Block { return Block{Text: s} }

// ToolUse returns a tool_use block; input is marshalled to JSON.
func ToolUse(id, name string, input any) Block {
	b, err := json.Marshal(input)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"marshal_error":%q}`, err.Error()))
	}
	return Block{ToolID: id, ToolName: name, ToolInput: string(b)}
}

// Turn is one scripted model response.
type Turn struct {
	Blocks []Block
	// StopReason defaults to tool_use when a block calls a tool, end_turn otherwise.
	StopReason string
	// Usage of the turn; zero values are filled with small defaults.
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	// Delay holds the answer back this long, as a slow model does; a caller
	// that goes away meanwhile gets nothing.
	Delay time.Duration
}

// Request is one request body the vendor received.
type Request struct {
	Raw       []byte
	MaxTokens int
	System    json.RawMessage
	Messages  []Message
}

// Message is one message of a received request.
type Message struct {
	Role    string
	Content []ContentBlock
}

// ContentBlock is one content block of a received message.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// ToolResultText returns the text of a tool_result block, whether its
// content is a string or a list of blocks, and how many images it carries.
func (b ContentBlock) ToolResultText() (string, int) {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s, 0
	}
	var parts []ContentBlock
	_ = json.Unmarshal(b.Content, &parts)
	var texts []string
	images := 0
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image":
			images++
		}
	}
	return strings.Join(texts, "\n"), images
}

// ToolResults returns the tool_result blocks of the request's last message.
func (r Request) ToolResults() []ContentBlock {
	if len(r.Messages) == 0 {
		return nil
	}
	var out []ContentBlock
	for _, b := range r.Messages[len(r.Messages)-1].Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// Vendor is a loopback server that speaks the Anthropic Messages streaming
// wire format, answering each request with the next scripted turn.
type Vendor struct {
	// URL is the value for ANTHROPIC_BASE_URL.
	URL string

	t        testing.TB
	mu       sync.Mutex
	turns    []Turn
	pick     func(Request) Turn
	requests []Request
}

// NewAnthropicFunc starts a vendor server that answers each request with the
// turn pick chooses for it, so concurrent runs each get their own script.
func NewAnthropicFunc(t testing.TB, pick func(Request) Turn) *Vendor {
	t.Helper()
	v := &Vendor{t: t, pick: pick}
	srv := httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(srv.Close)
	v.URL = srv.URL
	return v
}

// NewAnthropic starts a vendor server that answers with turns, in order,
// until the test ends.
func NewAnthropic(t testing.TB, turns ...Turn) *Vendor {
	t.Helper()
	v := &Vendor{t: t, turns: turns}
	srv := httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(srv.Close)
	v.URL = srv.URL
	return v
}

// Requests returns every request received so far, in order.
func (v *Vendor) Requests() []Request {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]Request(nil), v.requests...)
}

func (v *Vendor) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/v1/messages") {
		v.t.Errorf("vendor: unexpected request %s %s (%v)", req.Method, req.URL.Path, err)
		writeAPIError(w, "invalid_request_error", "unexpected request")
		return
	}
	var parsed struct {
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		v.t.Errorf("vendor: request body is not JSON: %v", err)
	}
	r := Request{Raw: body, MaxTokens: parsed.MaxTokens, System: parsed.System}
	for _, m := range parsed.Messages {
		msg := Message{Role: m.Role}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			msg.Content = []ContentBlock{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &msg.Content); err != nil {
			v.t.Errorf("vendor: message content: %v", err)
		}
		r.Messages = append(r.Messages, msg)
	}

	v.mu.Lock()
	n := len(v.requests)
	v.requests = append(v.requests, r)
	var turn Turn
	ok := n < len(v.turns)
	if ok {
		turn = v.turns[n]
	}
	v.mu.Unlock()
	if v.pick != nil {
		turn, ok = v.pick(r), true
	}
	if !ok {
		v.t.Errorf("vendor: request %d has no scripted turn (%d scripted)", n+1, len(v.turns))
		writeAPIError(w, "invalid_request_error", "no scripted turn left")
		return
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-req.Context().Done():
			return
		}
	}
	writeTurn(req.Context(), w, n, turn)
}

func writeAPIError(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

// writeTurn streams the n-th scripted turn in the Messages API format.
func writeTurn(ctx context.Context, w http.ResponseWriter, n int, turn Turn) {
	st := replay.StreamTurn{
		MessageID: fmt.Sprintf("msg_%04d", n+1), Model: "claude-sonnet-4-5", StopReason: "end_turn",
		Usage: replay.Usage{InputTokens: turn.InputTokens, OutputTokens: turn.OutputTokens,
			CacheReadInputTokens: turn.CacheReadTokens, CacheCreationInputTokens: turn.CacheWriteTokens},
	}
	if st.Usage.InputTokens == 0 {
		st.Usage.InputTokens = 1000 + int64(n)*100
	}
	if st.Usage.OutputTokens == 0 {
		st.Usage.OutputTokens = 50
	}
	for i, b := range turn.Blocks {
		switch {
		case b.ToolName != "":
			st.StopReason = "tool_use"
			st.Blocks = append(st.Blocks, replay.StreamBlock{Kind: "tool_use", Text: b.ToolInput, ToolID: b.ToolID, ToolName: b.ToolName,
				Pieces: 4, Cut: b.CutToolInput})
		case b.Thinking != "":
			st.Blocks = append(st.Blocks, replay.StreamBlock{Kind: "thinking", Text: b.Thinking, Pieces: 2,
				Signature: fmt.Sprintf("sig-%d-%d", n+1, i)})
		default:
			st.Blocks = append(st.Blocks, replay.StreamBlock{Kind: "text", Text: b.Text, Pieces: 2})
		}
	}
	if turn.StopReason != "" {
		st.StopReason = turn.StopReason
	}
	_ = replay.WriteStream(ctx, w, st)
}
