package gateway

import (
	"net/http"

	"nexus.local/gateway/mcpserver"
)

// mcpHandler serves Nexus over MCP at /mcp as the caller the gateway
// authenticated, carrying tool calls to nexus dev's paired host runtime when
// there is one.
func (g *Gateway) mcpHandler() http.Handler {
	return mcpserver.Handler(mcpserver.Config{
		Orchestrator:   g.client,
		User:           func(r *http.Request) string { return userFrom(r.Context()) },
		HostURL:        g.cfg.HostURL,
		HostToken:      g.cfg.HostToken,
		MaxPromptBytes: g.cfg.Limits.MaxPromptBytes,
		Heartbeat:      g.cfg.SSEKeepalive,
		Log:            g.env.Log.With("component", "mcp"),
	})
}
