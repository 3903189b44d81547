package orchestrator

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
)

// peerStatus is the status the orchestrator answers when a call to another
// service (the model-router, the capability service) failed; what says which
// call, e.g. "list hosts from the capability service".
//
// The peer's code is kept where the caller's answer depends on it: a
// refusal of the request (InvalidArgument, NotFound, FailedPrecondition,
// OutOfRange, AlreadyExists, Aborted), a limit (ResourceExhausted), a
// deadline or cancel that came from the caller, and a permanent failure of
// the peer (Unimplemented, Internal, DataLoss), which must not read as worth
// retrying. A peer that refused the mesh's own identity (Unauthenticated,
// PermissionDenied) is a configuration fault between services, so it is
// Internal: the client's credentials were fine. Only a peer that could not be
// reached, or failed without saying how, is Unavailable.
func peerStatus(err error, what string) error {
	if errors.Is(err, context.Canceled) {
		return refusal.Newf(codes.Canceled, agentv1.RefusalReason_REFUSAL_REASON_CANCELLED, "%s: %v", what, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return refusal.Newf(codes.DeadlineExceeded, agentv1.RefusalReason_REFUSAL_REASON_TIMEOUT, "%s: %v", what, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "%s: %v", what, err)
	}
	switch code := st.Code(); code {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.OutOfRange, codes.AlreadyExists,
		codes.Aborted, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled,
		codes.Unimplemented, codes.Internal, codes.DataLoss:
		// The peer's refusal passes on with its reason.
		return refusal.Wrap(err, code, what)
	case codes.Unauthenticated, codes.PermissionDenied:
		return refusal.Newf(codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "%s: the service refused this orchestrator's identity (%s: %s); check NEXUS_TLS_CERT, NEXUS_TLS_KEY and NEXUS_TLS_CA of both", what, code, st.Message())
	default:
		return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "%s: %s", what, st.Message())
	}
}
