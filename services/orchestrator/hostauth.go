package orchestrator

import (
	"context"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// AuthenticateHost answers the linked host of a host token, so the gateway
// refuses a made-up one before it reads the request's body.
func (l *hostLink) AuthenticateHost(ctx context.Context, req *agentv1.AuthenticateHostRequest) (*agentv1.LinkedHost, error) {
	return l.s.hostByToken(ctx, req.GetHostToken())
}
