// Package sweeper finds the runs that need a replica: a run whose result or
// cancel arrived while the replica that received it could not carry it on, a
// run whose tool-result deadline passed, a run handed over by a replica that
// is shutting down, and a run whose replica stopped renewing its lease. Every
// replica runs one; each sweep hands the due runs to claim, and the store
// gives each run to exactly one claimer.
//
// A run that still has an owner is taken only after this replica has seen
// the store answer for a full lease: while the store is away no owner can
// renew, so an expired lease then says nothing about the owner, which renews
// as soon as the store is back.
package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"nexus.local/services/orchestrator/state"
)

// batch bounds the runs one sweep looks at.
const batch = 100

// Sweeper periodically hands due runs to its claim function.
type Sweeper struct {
	store    state.Leases
	lease    time.Duration
	interval time.Duration
	clock    func() time.Time
	log      *slog.Logger
	claim    func(context.Context, state.Lease)

	// healthySince is when the store last started answering; zero while
	// it does not.
	healthySince time.Time
}

// New returns a sweeper that looks every interval and takes over a run whose
// owner stopped renewing only once the store has answered for lease. claim
// is called with each due run; it claims it (and may lose the race). clock is
// the time source (time.Now when nil) and log may be nil.
func New(store state.Leases, lease, interval time.Duration, clock func() time.Time, log *slog.Logger, claim func(context.Context, state.Lease)) *Sweeper {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{store: store, lease: lease, interval: interval, clock: clock, log: log, claim: claim}
}

// Run sweeps until ctx ends; it returns nil then. Sweep errors are logged and
// retried at the next tick: the store being briefly away must not stop the
// replica.
func (w *Sweeper) Run(ctx context.Context) error {
	if w.interval <= 0 {
		return fmt.Errorf("sweeper: interval must be positive, got %s", w.interval)
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("sweep due runs", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep looks for due runs once and hands them to claim; it returns how many
// it handed over.
func (w *Sweeper) Sweep(ctx context.Context) (int, error) {
	due, err := w.store.Due(ctx, batch)
	if err != nil {
		w.healthySince = time.Time{}
		return 0, err
	}
	now := w.clock()
	if w.healthySince.IsZero() {
		w.healthySince = now
	}
	trusted := now.Sub(w.healthySince) >= w.lease
	n := 0
	for _, l := range due {
		if l.Owner != "" && !trusted {
			continue
		}
		if l.Owner != "" {
			w.log.Warn("taking over a run whose replica stopped renewing its lease", "run", l.RunID, "session", l.SessionID, "owner", l.Owner)
		}
		w.claim(ctx, l)
		n++
	}
	return n, nil
}
