package runner

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
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
)

// Work carries the run of lease l on, on this replica, which holds the
// lease; workCtx is the context of every worker of the replica. pre, when
// set, is what was read with the claim (WakeClaim); nil, the worker reads it.
func Work(workCtx context.Context, s *Deps, l state.Lease, pre *Loaded) {
	log := s.Log.With("session", l.SessionID, "run", l.RunID)
	ctx, cancel := context.WithCancelCause(logging.WithLogger(workCtx, log))
	defer cancel(nil)
	defer pre.Release()

	rs, err := pre.getRun()
	if pre == nil {
		rs, err = state.RetryStore(ctx, func(ctx context.Context) (*orchestratorv1.RunState, error) { return s.Store.GetRun(ctx, l.RunID) })
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case errors.Is(err, state.ErrNotFound):
		log.Error("a scheduled run has no state; forgetting it", "err", err)
		_ = s.Store.Release(context.WithoutCancel(ctx), l)
		return
	case err != nil:
		// A state that cannot be read would fail on every replica that
		// claims it: end the run where its followers see it, rather than
		// leave the session busy for good.
		log.Error("read run state", "err", err)
		r := newRunner(s, log, l)
		r.RS = &orchestratorv1.RunState{
			RunId: l.RunID, SessionId: l.SessionID, Finished: true,
			Ending: []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
				Code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, Message: fmt.Sprintf("the run's saved state could not be read (%v), so it was ended; the session is ready for the next run", err), Retryable: true,
			}}}},
		}
		defer r.letGo()
		r.close(ctx)
		return
	}
	parent := s.Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": rs.GetTraceparent()})
	// One invoke_agent span per stretch a worker carries the run (GenAI agent
	// conventions); a suspended run resumes under a new one in the same trace.
	ctx, span := s.Tracer.Start(trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(parent)), metrics.AgentSpanName,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(metrics.AgentSpanAttrs(l.SessionID), attribute.String("run", l.RunID), attribute.String("session", l.SessionID))...))
	defer span.End()

	r := newRunner(s, log, l)
	r.RS, r.SessionID, r.RunID, r.Owner, r.HostApp = rs, rs.GetSessionId(), rs.GetRunId(), rs.GetUser(), rs.GetHostApp()
	r.pre = pre
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
	done := pre.cancelled()
	if pre == nil {
		d, stop, err := s.Store.Cancelled(ctx, l.RunID)
		if err != nil {
			log.Warn("watch cancel signal", "err", err)
		} else {
			defer stop()
			done = d
		}
	}
	if done != nil {
		r.Cancelled = done
		held.Go(func() {
			select {
			case <-done:
				cancel(call.ErrCancelled)
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
	case errors.Is(err, call.ErrSuspended):
		r.suspend(ctx)
	case errors.Is(cause, ErrDraining) || (err != nil && errors.Is(err, state.ErrUnavailable) && s.IsDraining()):
		r.SuspendFor = 0
		r.suspend(ctx)
	case errors.Is(cause, call.ErrCancelled) && r.awaitOutcome(ctx):
		// The cancel cut the run short with its script on the host: it
		// waits for what the script did.
		r.suspend(ctx)
	default:
		r.end(ctx, complete, err)
	}
}

// renewLease keeps the run's lease while ctx lasts. A renewal that fails
// because the store is away is tried again soon, so an owner renews as soon
// as the store is back, well before any other replica may claim the run.
func (s *Deps) renewLease(ctx context.Context, l state.Lease, cancel context.CancelCauseFunc, log *slog.Logger) {
	period := max(s.Cfg.RunLease/3, time.Millisecond)
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.Store.Renew(ctx, l, s.Cfg.LeaseTTL())
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
