package sweeper_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/sweeper"
)

// flaky is the real in-process store behind a switch that makes Due fail
// as a store outage does.
type flaky struct {
	*memory.Store
	down atomic.Bool
}

func (f *flaky) Due(ctx context.Context, limit int) ([]state.Lease, error) {
	if f.down.Load() {
		return nil, state.ErrUnavailable
	}
	return f.Store.Due(ctx, limit)
}

func TestSweepTrustsExpiredLeasesOnlyAfterAHealthyLease(t *testing.T) {
	const lease = 15 * time.Second
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := &flaky{Store: memory.New(clock)}
	var claimed []string
	sw := sweeper.New(store, lease, time.Second, clock, nil, func(_ context.Context, l state.Lease) { claimed = append(claimed, l.RunID) })

	// A run whose owner stopped renewing, and a suspended run whose result
	// arrived.
	if err := store.Acquire(ctx, state.Lease{RunID: "r-dead", SessionID: "s1", Owner: "replica-a"}, lease*2/3); err != nil {
		t.Fatal(err)
	}
	woken := state.Lease{RunID: "r-woken", SessionID: "s2", Owner: "replica-b"}
	if err := store.Acquire(ctx, woken, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := store.Suspend(ctx, woken, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := store.Wake(ctx, "r-woken"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(lease)

	steps := []struct {
		name    string
		advance time.Duration
		down    bool
		want    []string
	}{
		{"a fresh sweeper takes only the unowned run", 0, false, []string{"r-woken"}},
		{"nor the dead one a moment later", lease / 2, false, nil},
		{"while the store is away, nothing", lease, true, nil},
		{"nor right after it is back", time.Second, false, nil},
		{"nor before a full lease of answers", lease - 2*time.Second, false, nil},
		{"then the dead run is taken over", 2 * time.Second, false, []string{"r-dead"}},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		store.down.Store(st.down)
		claimed = nil
		n, err := sw.Sweep(ctx)
		if st.down != errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("%s: err = %v", st.name, err)
		}
		if n != len(st.want) || !slices.Equal(claimed, st.want) {
			t.Fatalf("%s: claimed %v (n=%d), want %v", st.name, claimed, n, st.want)
		}
		// The sweeper hands runs over; claiming them is the caller's job,
		// so the woken run is claimed here as a replica would.
		for _, id := range claimed {
			if err := store.Claim(ctx, state.Lease{RunID: id, Owner: "replica-c"}, time.Hour); err != nil {
				t.Fatalf("%s: claim %s: %v", st.name, id, err)
			}
		}
	}
}

func TestRunEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sw := sweeper.New(memory.New(nil), time.Second, time.Millisecond, nil, nil, func(context.Context, state.Lease) {})
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil when its context ends", err)
	}
	if err := sweeper.New(memory.New(nil), time.Second, 0, nil, nil, nil).Run(t.Context()); err == nil {
		t.Fatal("a zero interval was accepted")
	}
}
