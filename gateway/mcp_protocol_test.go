package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postRPC posts one JSON-RPC message to alice's /mcp and answers the
// response, its body, and the JSON-RPC message in it (a streamed answer
// carries it in its data line).
func postRPC(t *testing.T, base, body string) (resp *http.Response, raw []byte, text string) {
	t.Helper()
	resp = request(t, http.MethodPost, base+"/mcp", aliceKey, body,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	raw, _ = io.ReadAll(resp.Body)
	text = string(raw)
	if i := strings.Index(text, "data: "); i >= 0 {
		text = strings.TrimSpace(strings.SplitN(text[i+len("data: "):], "\n", 2)[0])
	}
	return resp, raw, text
}

// TestMCPUnknownMethod shows that a JSON-RPC request for a method the server
// does not have is answered the JSON-RPC way: an error object with -32601
// (method not found) naming the method, for the request's id.
func TestMCPUnknownMethod(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/frobnicate","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`,
	} {
		resp, raw, text := postRPC(t, base, body)
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

// TestMCPIDsEchoedExactly shows that a JSON-RPC request's id comes back byte
// for byte: numbers no 64-bit integer or double holds exactly (2^53+1, a
// fraction, an exponent) included, so a client can match each reply to its
// request. Before, 9007199254740993 came back as 9007199254740992, 1.2e59 as
// -9223372036854775808 and 1.5 as 1.
func TestMCPIDsEchoedExactly(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	for _, id := range []string{`9007199254740993`, `1.2e59`, `1.5`, `-0`, `1.0`, `12`, `"s-1"`} {
		for _, method := range []string{"tools/list", "ping", "no/such/method"} {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{}}`
			resp, raw, text := postRPC(t, base, body)
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(text), &msg); err != nil {
				t.Fatalf("%s: HTTP %d %q: not a JSON-RPC message", body, resp.StatusCode, raw)
			}
			if string(msg.ID) != id {
				t.Errorf("%s with id %s: answered with id %s", method, id, msg.ID)
			}
		}
	}
}
