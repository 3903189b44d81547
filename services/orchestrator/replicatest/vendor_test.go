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
	"time"

	"nexus.local/services/modelrouter/replay"
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
	// pace, when set, makes a first turn type a sentence slowly before its
	// tool call, so a test can stop a replica in the middle of it.
	pace time.Duration
	// firstTurns and resultTurns count requests without and with tool results.
	firstTurns, resultTurns atomic.Int64

	mu      sync.Mutex
	results map[string][]string
}

func newVendor(t testing.TB) *vendor { return newPacedVendor(t, 0) }

// newPacedVendor's first turns stream 30 text deltas pace apart before the
// tool call.
func newPacedVendor(t testing.TB, pace time.Duration) *vendor {
	v := &vendor{t: t, results: map[string][]string{}, pace: pace}
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

	n := v.nextID.Add(1)
	turn := replay.StreamTurn{MessageID: fmt.Sprintf("msg_%06d", n), Model: "claude-sonnet-4-5",
		StopReason: "end_turn", Usage: replay.Usage{InputTokens: 900, OutputTokens: 40}}
	if answered {
		v.resultTurns.Add(1)
		turn.Blocks = []replay.StreamBlock{{Kind: "text", Text: "The document has one body."}}
	} else {
		v.firstTurns.Add(1)
		turn.StopReason = "tool_use"
		turn.Blocks = []replay.StreamBlock{{Kind: "tool_use", ToolID: fmt.Sprintf("toolu_%06d", n), ToolName: "execute_data_collection",
			Text: `{"code":"print(len(App.ActiveDocument.Objects))","description":"Count the objects"}`, Pieces: 2}}
		if v.pace > 0 {
			turn.Pace = v.pace
			turn.Blocks = append([]replay.StreamBlock{{Kind: "text", Text: "Let me count the objects in the document before I change anything.", Pieces: 30}}, turn.Blocks...)
		}
	}
	_ = replay.WriteStream(r.Context(), w, turn)
}
