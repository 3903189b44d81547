// Package reaper fails runs whose replica died. Every replica runs one; each
// sweep takes the leases that ran out without being released (state.Leases
// hands each to exactly one caller), and for every such run leaves the
// session ready for the next run, ends the run's stream with an error event
// and finishes its event log, so a client following the run from any gateway
// sees a clear end instead of silence.
package reaper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// ErrorCode is the code of the error chunk a reaped run ends with.
const ErrorCode = "replica_lost"

// errorMessage tells the person what happened and what to do.
const errorMessage = "The orchestrator replica running this run stopped responding, so the run was ended. " +
	"Changes the host already committed are kept; the session is ready for the next run."

// claimTTL bounds how long one reaper holds a dead run while failing it; if
// the reaper dies too, another one picks the run up after this.
const claimTTL = time.Minute

// Reaper periodically fails runs whose lease expired.
type Reaper struct {
	store    state.Store
	interval time.Duration
	clock    func() time.Time
	log      *slog.Logger
	// id owns the reaper's claims, so a claim of a reaper that dies mid-way
	// expires like any other lease.
	id string
}

// New returns a reaper that sweeps every interval; clock is the time source
// (time.Now when nil) and log may be nil.
func New(store state.Store, interval time.Duration, clock func() time.Time, log *slog.Logger) *Reaper {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Reaper{store: store, interval: interval, clock: clock, log: log, id: "reaper-" + hex.EncodeToString(b[:])}
}

// Run sweeps until ctx ends; it returns nil then. Sweep errors are logged and
// retried at the next tick, because Redis being briefly away must not stop
// the replica.
func (r *Reaper) Run(ctx context.Context) error {
	if r.interval <= 0 {
		return fmt.Errorf("reaper: interval must be positive, got %s", r.interval)
	}
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if _, err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reap expired runs", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep takes the expired leases once and fails their runs; it returns how
// many runs it failed.
func (r *Reaper) Sweep(ctx context.Context) (int, error) {
	leases, err := r.store.Expired(ctx, r.clock())
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, l := range leases {
		if err := r.fail(ctx, l); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", l.RunID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// fail ends one dead run. Every step is idempotent and the run is held under
// the reaper's own lease meanwhile, so a reaper that dies half-way leaves a
// lease that expires and lets another reaper finish the job.
func (r *Reaper) fail(ctx context.Context, dead state.Lease) error {
	log := r.log.With("session", dead.SessionID, "run", dead.RunID, "owner", dead.Owner)
	claim := state.Lease{RunID: dead.RunID, SessionID: dead.SessionID, Owner: r.id}
	if err := r.store.Acquire(ctx, claim, claimTTL); err != nil {
		// A replica that came back and re-acquired the run keeps it.
		if errors.Is(err, state.ErrLeaseLost) {
			return nil
		}
		return fmt.Errorf("claim: %w", err)
	}

	// The mailbox first, and only while the session still names this run:
	// once the session is cleared a new run may open its own mailbox.
	sess, err := r.store.Get(ctx, dead.SessionID)
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read session: %w", err)
	case sess.GetActiveRunId() == dead.RunID:
		if err := r.store.CloseMailbox(ctx, dead.SessionID); err != nil {
			return err
		}
	}
	if _, err := r.store.Update(ctx, dead.SessionID, func(s *agentv1.Session) error {
		if s.GetActiveRunId() == dead.RunID {
			s.ActiveRunId = ""
		}
		if s.GetPendingToolCall().GetRunId() == dead.RunID {
			s.PendingToolCall = nil
		}
		return nil
	}); err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("clear session: %w", err)
	}

	// The session is usable before the error event announces the end, so a
	// client that reacts to the event by starting a new run succeeds.
	if err := r.endStream(ctx, dead, log); err != nil {
		return err
	}
	if err := r.store.Release(ctx, claim); err != nil {
		log.Warn("release reaper claim", "err", err)
	}
	log.Warn("failed a run whose replica stopped renewing its lease")
	return nil
}

// endStream appends the error chunk after the last logged chunk and
// finishes the log, unless the log is already finished.
func (r *Reaper) endStream(ctx context.Context, dead state.Lease, log *slog.Logger) error {
	// A replica that is alive but cut off may still append; on a seq clash
	// read the log again and take the next seq.
	const attempts = 5
	var appendErr error
	for range attempts {
		last, finished, err := r.store.LastSeq(ctx, dead.RunID)
		if err != nil {
			return err
		}
		if finished {
			return nil
		}
		appendErr = r.store.Append(ctx, dead.RunID, &agentv1.StreamChunk{
			Seq:       last + 1,
			RunId:     dead.RunID,
			SessionId: dead.SessionID,
			Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
				Code: ErrorCode, Message: errorMessage, Retryable: true,
			}},
		})
		if appendErr == nil {
			return r.store.Finish(ctx, dead.RunID)
		}
	}
	return fmt.Errorf("append error chunk: %w", appendErr)
}
