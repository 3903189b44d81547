package gateway

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// mcpPath is where the gateway serves MCP.
const mcpPath = "/mcp"

// mcpMetadataPath is the OAuth protected-resource metadata of /mcp, at the
// well-known path RFC 9728 §3.1 makes by inserting the well-known segment
// before the resource's path.
const mcpMetadataPath = "/.well-known/oauth-protected-resource" + mcpPath

// requestOrigin is the scheme and host a client reached the gateway by. The
// host guard has refused any Host not in NEXUS_PUBLIC_HOSTS before this runs;
// the scheme is https behind a TLS-terminating proxy that says so.
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// mcpResourceMetadata serves RFC 9728 metadata for /mcp: the resource, the
// configured OIDC issuer as its authorization server (none with API keys
// only), and bearer tokens in the Authorization header alone.
func mcpResourceMetadata(issuer string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md := &oauthex.ProtectedResourceMetadata{
			Resource:               requestOrigin(r) + mcpPath,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "Nexus MCP server",
		}
		if issuer != "" {
			md.AuthorizationServers = []string{issuer}
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		auth.ProtectedResourceMetadataHandler(md).ServeHTTP(w, r)
	})
}

// pointToMetadata adds the metadata's URL to the WWW-Authenticate challenge
// of a refused /mcp request (RFC 9728 §5.1), so an MCP client finds where to
// sign in from the refusal itself.
func pointToMetadata(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challengeWriter{ResponseWriter: w, metadata: requestOrigin(r) + mcpMetadataPath}, r)
	})
}

// challengeWriter rewrites the Bearer challenge of a 401 as it is written.
type challengeWriter struct {
	http.ResponseWriter
	metadata string
	wrote    bool
}

func (c *challengeWriter) WriteHeader(code int) {
	if !c.wrote && code == http.StatusUnauthorized {
		if ch := c.Header().Get("WWW-Authenticate"); strings.HasPrefix(ch, "Bearer") {
			c.Header().Set("WWW-Authenticate", ch+`, resource_metadata="`+c.metadata+`"`)
		}
	}
	c.wrote = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *challengeWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Flush keeps streaming MCP responses flushable through the wrapper.
func (c *challengeWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection beneath.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
