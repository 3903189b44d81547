package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPUnknownMethod shows that a JSON-RPC request for a method the server
// does not have is answered the JSON-RPC way: an error object with -32601
// (method not found) naming the method, for the request's id.
func TestMCPUnknownMethod(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/frobnicate","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`,
	} {
		resp := request(t, http.MethodPost, base+"/mcp", aliceKey, body,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
		raw, _ := io.ReadAll(resp.Body)
		text := string(raw)
		// A streamed answer carries the JSON-RPC message in its data line.
		if i := strings.Index(text, "data: "); i >= 0 {
			text = strings.TrimSpace(strings.SplitN(text[i+len("data: "):], "\n", 2)[0])
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(text), &msg); err != nil || msg.Error == nil {
			t.Fatalf("%s: HTTP %d %q (%s): want a JSON-RPC error object", body, resp.StatusCode, raw, resp.Header.Get("Content-Type"))
		}
		if msg.Error.Code != -32601 || string(msg.ID) != "7" || msg.JSONRPC != "2.0" {
			t.Errorf("%s: got %s, want code -32601 for id 7", body, text)
		}
		t.Logf("HTTP %d: %s", resp.StatusCode, text)
	}
}
