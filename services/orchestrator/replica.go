package orchestrator

import (
	"context"
	"errors"
	"time"

	"nexus.local/services/orchestrator/runner"
	"nexus.local/services/orchestrator/state"
)

// This replica's share of the work: draining, the workers it runs, the runs
// it claims and the wake-ups it sends.

// drain starts a graceful stop: readiness goes NOT_SERVING, followers end
// so that clients follow from another replica, no new work is taken, model
// turns under way may finish within DrainTimeout, and what is left is
// handed over to other replicas.
func (s *Service) drain() { s.drainOnce.Do(s.startDrain) }

func (s *Service) startDrain() {
	s.env.Log.Info("draining", "timeout", s.cfg.DrainTimeout)
	if s.health != nil {
		s.health.Shutdown()
	}
	s.beginDrain()
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	go func() {
		defer close(s.drainDone)
		t := time.NewTimer(s.cfg.DrainTimeout)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
			s.env.Log.Info("drain timeout: handing the remaining runs over")
			s.stopWork(runner.ErrDraining)
		}
	}()
}

func (s *Service) isDraining() bool { return s.drainCtx.Err() != nil }

// launch sets a worker on a run this replica holds, with pre, when set,
// what was read with its claim. A replica that is closing hands the run
// straight back.
func (s *Service) launch(l state.Lease, pre *runner.Loaded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		pre.Release()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.workCtx), state.CleanupTimeout)
		defer cancel()
		if err := s.store.Suspend(ctx, l, 0); err != nil {
			s.env.Log.Warn("hand over a run while closing", "run", l.RunID, "err", err)
		}
		return
	}
	if s.workers == 0 {
		s.idle = make(chan struct{})
	}
	s.workers++
	go func() {
		defer s.workerDone()
		runner.Work(s.workCtx, s.run, l, pre)
	}()
}

func (s *Service) workerDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers--
	if s.workers == 0 {
		close(s.idle)
	}
}

// claim takes a due run for this replica and carries it on; losing the race
// to another replica is fine.
func (s *Service) claim(ctx context.Context, l state.Lease) {
	if s.isDraining() {
		return
	}
	l.Owner = s.replica
	err := s.store.Claim(ctx, l, s.cfg.limits().LeaseTTL())
	switch {
	case err == nil:
		s.launch(l, nil)
	case !errors.Is(err, state.ErrLeaseLost):
		s.env.Log.Warn("claim run", "run", l.RunID, "err", err)
	}
}

// wake makes a suspended run due and, unless this replica is draining,
// claims it here at once, with what its worker goes on from (callID's
// mailbox among it, when set); the sweepers of every replica are the
// fallback.
// A wake-up the store could not take is tried again, in the background,
// until the store is back: the result or cancel behind it is already
// stored, and without the wake-up the run would sleep until its deadline.
func (s *Service) wake(ctx context.Context, l state.Lease, callID string) {
	if !s.isDraining() {
		// Woken, claimed and read in one step: the result's rendezvous
		// costs one round trip here, not six.
		l.Owner = s.replica
		pre, err := runner.WakeClaim(ctx, s.store, l, s.cfg.limits().LeaseTTL(), callID)
		switch {
		case err == nil:
			s.launch(l, pre)
			return
		case errors.Is(err, state.ErrLeaseLost):
			// The run has an owner, which looks for results after it
			// suspends, or another replica took it.
			return
		case !errors.Is(err, state.ErrUnavailable):
			s.env.Log.Warn("wake and claim run", "run", l.RunID, "err", err)
		}
	}
	err := s.store.Wake(ctx, l.RunID)
	if errors.Is(err, state.ErrUnavailable) {
		s.env.Log.Warn("wake run later: the state store is away", "run", l.RunID, "err", err)
		go func() {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
			defer cancel()
			if err := state.Retry(wctx, func(ctx context.Context) error { return s.store.Wake(ctx, l.RunID) }); err != nil {
				s.env.Log.Warn("wake run", "run", l.RunID, "err", err)
				return
			}
			s.claim(wctx, l)
		}()
		return
	}
	if err != nil {
		s.env.Log.Warn("wake run", "run", l.RunID, "err", err)
		return
	}
	s.claim(ctx, l)
}
