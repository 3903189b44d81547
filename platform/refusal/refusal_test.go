package refusal

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// TestReasonTravels: the reason New puts in a status comes back out of it,
// through a wrapped error, a status rebuilt from its proto (as after a gRPC
// hop) and a peer's prefix; a status without one is read by its code.
func TestReasonTravels(t *testing.T) {
	err := New(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL, "session s is not waiting on tool call c", LimitName, "x")
	hop := status.ErrorProto(status.Convert(err).Proto())
	for name, e := range map[string]error{
		"as made":     err,
		"wrapped":     fmt.Errorf("submit: %w", err),
		"after a hop": hop,
		"passed on":   Wrap(hop, codes.Aborted, "submit"),
	} {
		if got := Of(e); got != agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL {
			t.Errorf("%s: reason %s", name, got)
		}
	}
	if md := Info(status.Convert(hop)).GetMetadata(); md[LimitName] != "x" {
		t.Errorf("metadata %v", md)
	}
	if got := status.Convert(Wrap(hop, codes.Aborted, "submit")).Message(); got != "submit: session s is not waiting on tool call c" {
		t.Errorf("passed on: %q", got)
	}
	if got := Of(status.Error(codes.NotFound, "x")); got != agentv1.RefusalReason_REFUSAL_REASON_INTERNAL {
		t.Errorf("a NotFound without a reason: %s", got)
	}
	if got := Of(status.Error(codes.Unavailable, "x")); got != agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE {
		t.Errorf("Unavailable without a reason: %s", got)
	}
	if got := Of(errors.New("plain")); got != agentv1.RefusalReason_REFUSAL_REASON_INTERNAL {
		t.Errorf("a plain error: %s", got)
	}
}
