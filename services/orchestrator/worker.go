package orchestrator

// This file is the worker that carries a claimed run, and the lease it keeps while it does.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/logging"
	"nexus.local/services/orchestrator/state"
)

// work carries the run of lease on, on this replica, which holds the lease.
func (s *Service) work(l state.Lease) {
	log := s.env.Log.With("session", l.SessionID, "run", l.RunID)
	ctx, cancel := context.WithCancelCause(logging.WithLogger(s.workCtx, log))
	defer cancel(nil)

	rs, err := retryStore(ctx, func(ctx context.Context) (*orchestratorv1.RunState, error) { return s.store.GetRun(ctx, l.RunID) })
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case errors.Is(err, state.ErrNotFound):
		log.Error("a scheduled run has no state; forgetting it", "err", err)
		_ = s.store.Release(context.WithoutCancel(ctx), l)
		return
	case err != nil:
		// A state that cannot be read would fail on every replica that
		// claims it: end the run where its followers see it, rather than
		// leave the session busy for good.
		log.Error("read run state", "err", err)
		r := &runner{s: s, log: log, lease: l, sessionID: l.SessionID, runID: l.RunID, rs: &orchestratorv1.RunState{
			RunId: l.RunID, SessionId: l.SessionID, Finished: true,
			Ending: []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
				Code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, Message: fmt.Sprintf("the run's saved state could not be read (%v), so it was ended; the session is ready for the next run", err), Retryable: true,
			}}}},
		}}
		defer r.letGo()
		r.close(ctx)
		return
	}
	parent := s.env.Tel.Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": rs.GetTraceparent()})
	ctx, span := s.env.Tel.Tracer(ServiceName).Start(trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(parent)), "run",
		trace.WithAttributes(attribute.String("run", l.RunID), attribute.String("session", l.SessionID)))
	defer span.End()

	r := &runner{
		s: s, log: log, lease: l, rs: rs, sessionID: rs.GetSessionId(), runID: rs.GetRunId(), owner: rs.GetUser(), hostApp: rs.GetHostApp(),
	}
	defer r.letGo()
	if rs.GetTotal() == nil {
		rs.Total = &modelv1.Usage{}
	}
	if rs.GetFinished() {
		r.close(ctx)
		return
	}

	// The lease is renewed, and a cancel watched, only while this worker
	// holds the run; both stop before the run is suspended.
	hold, release := context.WithCancel(ctx)
	var held sync.WaitGroup
	held.Go(func() { s.renewLease(hold, l, cancel, log) })
	if done, stop, err := s.store.Cancelled(ctx, l.RunID); err != nil {
		log.Warn("watch cancel signal", "err", err)
	} else {
		defer stop()
		r.cancelled = done
		held.Go(func() {
			select {
			case <-done:
				cancel(errCancelled)
			case <-hold.Done():
			}
		})
	}
	complete, err := r.resume(ctx)
	release()
	held.Wait()

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLeaseLost):
		log.Warn("stopped working on a run another replica took over")
	case errors.Is(err, errSuspended):
		r.suspend(ctx)
	case errors.Is(cause, errDraining) || (err != nil && errors.Is(err, state.ErrUnavailable) && s.isDraining()):
		r.suspendFor = 0
		r.suspend(ctx)
	default:
		r.end(ctx, complete, err)
	}
}

// renewLease keeps the run's lease while ctx lasts. A renewal that fails
// because the store is away is tried again soon, so an owner renews as soon
// as the store is back, well before any other replica may claim the run.
func (s *Service) renewLease(ctx context.Context, l state.Lease, cancel context.CancelCauseFunc, log *slog.Logger) {
	period := max(s.cfg.RunLease/3, time.Millisecond)
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.store.Renew(ctx, l, s.cfg.leaseTTL())
		switch {
		case errors.Is(err, state.ErrLeaseLost):
			log.Error("run lease lost", "err", err)
			cancel(errLeaseLost)
			return
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("renew run lease", "err", err)
			}
			t.Reset(min(period, renewRetry))
		default:
			t.Reset(period)
		}
	}
}

// renewRetry paces renewals while the store is away.
const renewRetry = 200 * time.Millisecond
