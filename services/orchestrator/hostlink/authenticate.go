package hostlink

import (
	"context"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// AuthenticateHost answers the linked host of a host token, so the gateway
// refuses a made-up one before it reads the request's body.
func (s *Server) AuthenticateHost(ctx context.Context, req *agentv1.AuthenticateHostRequest) (*agentv1.LinkedHost, error) {
	return s.hostByToken(ctx, req.GetHostToken())
}
