package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMCPProtectedResourceMetadata: /mcp is described by RFC 9728 metadata
// at its well-known path, naming the configured OIDC issuer as its
// authorization server, and a refused /mcp request points to it in its
// Bearer challenge (§5.1), so an MCP client that signs in with OAuth finds
// where.
func TestMCPProtectedResourceMetadata(t *testing.T) {
	iss := startOIDCIssuer(t)
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_OIDC_ISSUER", iss.URL, "NEXUS_OIDC_AUDIENCE", "nexus-mcp"))

	resp := request(t, http.MethodGet, base+"/.well-known/oauth-protected-resource/mcp", "", "")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("metadata: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var md map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// §3.3: the resource in the metadata is the one the client asked about.
	if md["resource"] != base+"/mcp" {
		t.Errorf("resource %v, want %s", md["resource"], base+"/mcp")
	}
	if as, _ := md["authorization_servers"].([]any); len(as) != 1 || as[0] != iss.URL {
		t.Errorf("authorization_servers %v, want [%s]", md["authorization_servers"], iss.URL)
	}
	if bm, _ := md["bearer_methods_supported"].([]any); len(bm) != 1 || bm[0] != "header" {
		t.Errorf("bearer_methods_supported %v, want [header]: a token in a URL is refused", md["bearer_methods_supported"])
	}

	refused := request(t, http.MethodPost, base+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Accept", "application/json, text/event-stream")
	refused.Body.Close()
	want := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	if ch := refused.Header.Get("WWW-Authenticate"); refused.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer") || !strings.Contains(ch, want) {
		t.Errorf("unauthenticated /mcp: status %d, WWW-Authenticate %q, want a Bearer challenge with %s", refused.StatusCode, ch, want)
	}
	// Only GET reads the metadata.
	post := request(t, http.MethodPost, base+"/.well-known/oauth-protected-resource/mcp", "", "{}")
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST to the metadata: status %d, want 405", post.StatusCode)
	}
}
