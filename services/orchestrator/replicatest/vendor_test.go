package replicatest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// vendor is a loopback server speaking the Anthropic Messages streaming wire
// format. It holds no per-session script: a request whose last message
// carries a tool result is answered with a final text, any other request with
// one execute_data_collection call, so any number of concurrent sessions can
// share it. It counts every tool result it is sent, by tool_use id.
type vendor struct {
	url    string
	t      testing.TB
	nextID atomic.Int64

	mu      sync.Mutex
	results map[string][]string
}

func newVendor(t testing.TB) *vendor {
	v := &vendor{t: t, results: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(srv.Close)
	v.url = srv.URL
	return v
}

// toolResults returns the texts the model was sent for tool call id.
func (v *vendor) toolResults(id string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.results[id]...)
}

func (v *vendor) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		v.t.Errorf("vendor: request without messages: %v", err)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no messages"}}`, http.StatusBadRequest)
		return
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &blocks)
	answered := false
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		answered = true
		v.mu.Lock()
		v.results[b.ToolUseID] = append(v.results[b.ToolUseID], string(b.Content))
		v.mu.Unlock()
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	n := v.nextID.Add(1)
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%06d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 900, "output_tokens": 1},
	}})
	stop := "end_turn"
	if answered {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": "The document has one body."}})
	} else {
		stop = "tool_use"
		input := `{"code":"print(len(App.ActiveDocument.Objects))","description":"Count the objects"}`
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%06d", n), "name": "execute_data_collection", "input": map[string]any{}}})
		half := len(input) / 2
		for _, p := range []string{input[:half], input[half:]} {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 40}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
