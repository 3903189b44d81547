package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// serverRequests are the JSON-RPC requests an MCP server answers (the MCP
// specification's client-to-server requests).
func serverRequests() []string {
	return []string{
		"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
		"resources/unsubscribe", "logging/setLevel", "completion/complete", "server/discover",
		"subscriptions/listen",
	}
}

// serverNotifications are the client-to-server notifications.
func serverNotifications() []string {
	return []string{"notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"}
}

// codeMethodNotFound is JSON-RPC's error code for a method the server lacks.
const codeMethodNotFound = -32601

// answerUnknownMethods answers a JSON-RPC request for a method no MCP server
// has with JSON-RPC's own error object (-32601, method not found) for its id,
// and a notification of one with 202 Accepted (a notification gets no
// answer), where the transport underneath would answer 400 in plain text.
// Every other message goes to next unchanged.
func answerUnknownMethods(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The body limit already answered; an aborted read has no one to answer.
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
		}
		// Batches, responses and bodies that are not JSON are the
		// transport's to judge.
		if json.Unmarshal(body, &msg) != nil || msg.Method == "" ||
			slices.Contains(serverRequests(), msg.Method) || slices.Contains(serverNotifications(), msg.Method) {
			next.ServeHTTP(w, r)
			return
		}
		if len(msg.ID) == 0 || string(msg.ID) == "null" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"jsonrpc": "2.0",
			"id":      msg.ID,
			"error": map[string]any{
				"code":    codeMethodNotFound,
				"message": fmt.Sprintf("method not found: %q (this MCP server answers %v)", msg.Method, serverRequests()),
			},
		})
	})
}
