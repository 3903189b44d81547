package memory

import (
	"context"
	"slices"
	"time"

	"nexus.local/services/orchestrator/state"
)

// Acquire records a new run unless another owner holds an unexpired lease.
func (s *Store) Acquire(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if cur, ok := s.leases[l.RunID]; ok && cur.lease.Owner != l.Owner && now.Before(cur.due) {
		return state.ErrLeaseLost
	}
	s.leases[l.RunID] = leaseEntry{lease: l, due: now.Add(ttl)}
	return nil
}

// Renew extends a lease its owner still holds, also after it ran out.
func (s *Store) Renew(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.leases[l.RunID]
	if !ok || cur.lease.Owner != l.Owner {
		return state.ErrLeaseLost
	}
	cur.due = s.now().Add(ttl)
	s.leases[l.RunID] = cur
	return nil
}

// Suspend leaves the run without an owner, due after wait.
func (s *Store) Suspend(_ context.Context, l state.Lease, wait time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.leases[l.RunID]
	if !ok || cur.lease.Owner != l.Owner {
		return state.ErrLeaseLost
	}
	cur.lease.Owner = ""
	cur.due = s.now().Add(wait)
	s.leases[l.RunID] = cur
	return nil
}

// Wake makes a suspended run due now.
func (s *Store) Wake(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakeLocked(runID)
	return nil
}

// WakeClaim wakes the run and claims it under one lock.
func (s *Store) WakeClaim(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakeLocked(l.RunID)
	return s.claimLocked(l, ttl)
}

func (s *Store) wakeLocked(runID string) {
	if cur, ok := s.leases[runID]; ok && cur.lease.Owner == "" {
		if now := s.now(); now.Before(cur.due) {
			cur.due = now
			s.leases[runID] = cur
		}
	}
}

// Claim takes a due run.
func (s *Store) Claim(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(l, ttl)
}

func (s *Store) claimLocked(l state.Lease, ttl time.Duration) error {
	now := s.now()
	cur, ok := s.leases[l.RunID]
	if !ok || now.Before(cur.due) {
		return state.ErrLeaseLost
	}
	cur.lease.Owner = l.Owner
	cur.due = now.Add(ttl)
	s.leases[l.RunID] = cur
	return nil
}

// Release forgets the run when l.Owner holds it.
func (s *Store) Release(_ context.Context, l state.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[l.RunID]; ok && cur.lease.Owner == l.Owner {
		delete(s.leases, l.RunID)
	}
	return nil
}

// Due returns up to limit runs whose due time has passed, oldest first.
func (s *Store) Due(_ context.Context, limit int) ([]state.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var due []leaseEntry
	for _, e := range s.leases {
		if !now.Before(e.due) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b leaseEntry) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return compareStrings(a.lease.RunID, b.lease.RunID)
	})
	out := make([]state.Lease, 0, min(len(due), limit))
	for _, e := range due[:min(len(due), limit)] {
		out = append(out, e.lease)
	}
	return out, nil
}
