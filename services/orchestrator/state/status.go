package state

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Status answers a request whose store write failed: a full store is
// ResourceExhausted with a message that says so (the gateway shows it),
// anything else Unavailable.
func Status(err error, what string) error {
	if errors.Is(err, ErrFull) {
		return status.Errorf(codes.ResourceExhausted, "%s: %v; runs already going wait and carry on once there is room. Retry later", what, err)
	}
	return status.Errorf(codes.Unavailable, "%s: %v", what, err)
}
