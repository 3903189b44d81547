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

// TestMCPElicitingSessionIsTheCallers shows that a client offering
// elicitation in initialize (MCP 2025-06-18) gets an MCP session of its own,
// and that the session answers only the caller who made it: another user
// presenting its id is refused.
func TestMCPElicitingSessionIsTheCallers(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18"}
	init := request(t, http.MethodPost, base+"/mcp", aliceKey,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`,
		mcpHeaders...)
	io.Copy(io.Discard, init.Body)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize offering elicitation: HTTP %d, session %q; want a session", init.StatusCode, sid)
	}
	plain := request(t, http.MethodPost, base+"/mcp", aliceKey,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		mcpHeaders...)
	io.Copy(io.Discard, plain.Body)
	if plain.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a client without elicitation got a session; it is served statelessly")
	}
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`
	for _, tt := range []struct {
		who, key string
		want     int
	}{{"bob", bobKey, http.StatusNotFound}, {"alice", aliceKey, http.StatusOK}} {
		resp := request(t, http.MethodPost, base+"/mcp", tt.key, call, append(mcpHeaders, "Mcp-Session-Id", sid)...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.want {
			t.Errorf("%s with alice's MCP session: HTTP %d %s, want %d", tt.who, resp.StatusCode, b, tt.want)
		}
	}
}
