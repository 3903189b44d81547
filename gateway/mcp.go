package gateway

import (
	"context"
	"net/http"

	"nexus.local/gateway/mcpserver"
	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// mcpHandler serves Nexus over MCP at /mcp as the caller the gateway
// authenticated, carrying tool calls to nexus dev's paired host runtime when
// there is one. Its runs survive the loss of an orchestrator replica the way
// the SSE stream does.
func (g *Gateway) mcpHandler() http.Handler {
	return mcpserver.Handler(mcpserver.Config{
		Orchestrator: g.client,
		Follow: func(ctx context.Context, req *agentv1.RunRequest) (mcpserver.ChunkStream, error) {
			stream, err := g.client.Run(ctx, req)
			if err != nil {
				return nil, err
			}
			return g.resuming(ctx, stream, "", 0), nil
		},
		User:           func(r *http.Request) string { return userFrom(r.Context()) },
		HostURL:        g.cfg.HostURL,
		HostToken:      g.cfg.HostToken,
		MaxPromptBytes: g.cfg.Limits.MaxPromptBytes,
		Heartbeat:      g.cfg.SSEKeepalive,
		Log:            g.env.Log.With("component", "mcp"),
	})
}
