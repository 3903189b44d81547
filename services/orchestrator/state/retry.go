package state

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Retry calls fn until it succeeds, fails for a reason other than the store
// being unreachable, or ctx ends. A store outage delays a run; it never
// fails it.
func Retry(ctx context.Context, fn func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
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

// RetryStore is Retry for a call that returns a value.
func RetryStore[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	var v T
	err := Retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// RetryStore3 is Retry for a call that returns two values.
func RetryStore3[A, B any](ctx context.Context, fn func(context.Context) (A, B, error)) (A, B, error) {
	var a A
	var b B
	err := Retry(ctx, func(ctx context.Context) error {
		var err error
		a, b, err = fn(ctx)
		return err
	})
	return a, b, err
}

// CleanupTimeout bounds the work done after a worker's context ended: the
// last chunks, clearing the session and releasing the lease. It is long
// enough to wait out a short store outage.
const CleanupTimeout = 2 * time.Minute
