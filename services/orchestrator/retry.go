package orchestrator

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"nexus.local/services/orchestrator/state"
)

// retry calls fn until it succeeds, fails for a reason other than the store
// being unreachable, or ctx ends. A store outage delays a run; it never
// fails it.
func retry(ctx context.Context, fn func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !errors.Is(err, state.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		// Jitter keeps a thousand waiting runs from coming back in one burst.
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// retryStore is retry for a call that returns a value.
func retryStore[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	var v T
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// retryStore3 is retry for a call that returns two values.
func retryStore3[A, B any](ctx context.Context, fn func(context.Context) (A, B, error)) (A, B, error) {
	var a A
	var b B
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		a, b, err = fn(ctx)
		return err
	})
	return a, b, err
}

// storeStatus answers a request whose store write failed: a full store is
// ResourceExhausted with a message that says so (the gateway shows it),
// anything else Unavailable.
func storeStatus(err error, what string) error {
	if errors.Is(err, state.ErrFull) {
		return status.Errorf(codes.ResourceExhausted, "%s: %v; runs already going wait and carry on once there is room. Retry later", what, err)
	}
	return status.Errorf(codes.Unavailable, "%s: %v", what, err)
}
