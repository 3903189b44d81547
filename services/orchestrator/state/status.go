package state

import (
	"errors"

	"google.golang.org/grpc/codes"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
)

// Status answers a request whose store write failed: a full store is
// ResourceExhausted with a message that says so (the gateway shows it),
// anything else Unavailable.
func Status(err error, what string) error {
	if errors.Is(err, ErrFull) {
		return refusal.Newf(codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_STORE_FULL, "%s: %v; runs already going wait and carry on once there is room. Retry later", what, err)
	}
	return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "%s: %v", what, err)
}
