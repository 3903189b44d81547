package orchestrator

// This file starts runs: the public Run and StartRun calls and the session bookkeeping they do.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/runner"
	"nexus.local/services/orchestrator/state"
)

// maxRunIDs is how many run ids a session remembers for clients that reopen it.
const maxRunIDs = 100

// Run starts a run on the caller's session and follows it. Closing the
// stream stops following only: the run goes on, and StreamRunEvents rejoins it.
func (s *Service) Run(req *agentv1.RunRequest, stream agentv1.OrchestratorService_RunServer) error {
	runID, err := s.startRun(stream.Context(), req.GetSessionId(), req.GetPrompt(), req.GetModel())
	if err != nil {
		return err
	}
	return s.follow(stream.Context(), runID, 0, s.oneByOne(stream.Context(), stream.Send))
}

// StartRun starts a run and answers with its id at once.
func (s *Service) StartRun(ctx context.Context, req *agentv1.StartRunRequest) (*agentv1.StartRunResponse, error) {
	runID, err := s.startRun(ctx, req.GetSessionId(), req.GetPrompt(), req.GetModel())
	if err != nil {
		return nil, err
	}
	return &agentv1.StartRunResponse{RunId: runID, SessionId: req.GetSessionId()}, nil
}

// startRun records a new run (session, run state, transcript, first events
// and lease) and sets a worker on it. Everything the run needs from here on
// is in the store, so the worker does not depend on the caller's request.
func (s *Service) startRun(ctx context.Context, sessionID, prompt, modelID string) (string, error) {
	sess, err := s.ownedSession(ctx, sessionID)
	if err != nil {
		return "", err
	}
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return "", refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "prompt is required: say what should be done")
	}
	if s.isDraining() {
		return "", refusal.New(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_SHUTTING_DOWN, "this orchestrator replica is shutting down; start the run again")
	}
	if modelID == "" {
		modelID = sess.GetModel()
	}
	model, err := s.resolveModel(ctx, modelID)
	if err != nil {
		return "", err
	}

	runID := state.NewID("r_")
	sess, err = s.store.Update(ctx, sess.GetSessionId(), func(x *agentv1.Session) error {
		if x.GetActiveRunId() != "" {
			return state.ErrRunActive
		}
		x.ActiveRunId = runID
		x.LastRunId = runID
		x.RunIds = append(x.RunIds, runID)
		if n := len(x.RunIds); n > maxRunIDs {
			x.RunIds = x.RunIds[n-maxRunIDs:]
		}
		x.Model = model.GetId()
		x.LastPrompt = firstRunes(prompt, 200)
		if x.GetFirstPrompt() == "" {
			x.FirstPrompt = x.LastPrompt
		}
		x.UpdateTime = timestamppb.New(s.now())
		// Budgets and phase hints are per run; the held script stays, so the
		// next request can edit what the last one wrote.
		x.FixRetryCount = 0
		x.IterationCount = 0
		x.LastCompletedTool = ""
		x.LastTaskCommitted = false
		x.PendingToolCall = nil
		return nil
	})
	if errors.Is(err, state.ErrRunActive) {
		return "", refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_RUN_ACTIVE, "session %s already has an active run; cancel it or wait for it to end", sessionID)
	}
	// The store may be away right now: the session is freed for the next
	// run as soon as it is back, not left busy with a run that never
	// started. The caller hears at once.
	free := func() {
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
			defer cancel()
			s.clearActiveRun(cctx, sessionID, runID)
		}()
	}
	if err != nil {
		if errors.Is(err, state.ErrUnavailable) {
			// The write may have landed with only its answer lost.
			free()
		}
		return "", state.Status(err, "start run")
	}
	fail := func(what string, err error) (string, error) {
		free()
		return "", state.Status(err, "start run: "+what)
	}

	carrier := propagation.MapCarrier{}
	s.env.Tel.Propagator.Inject(ctx, carrier)
	rs := &orchestratorv1.RunState{
		RunId: runID, SessionId: sessionID, User: identity.FromIncoming(ctx), Model: model.GetId(), HostApp: sess.GetHostApp(), Eval: sess.GetEval(),
		Total: &modelv1.Usage{}, StartTime: timestamppb.New(s.now()), Traceparent: carrier.Get("traceparent"),
	}
	first := []*agentv1.Metadata{{Kind: &agentv1.Metadata_RunStarted{RunStarted: &agentv1.RunStarted{
		Model: model.GetId(), HostApp: sess.GetHostApp(), Prompt: prompt, ReviewPolicy: call.EffectivePolicy(sess.GetReviewPolicy()),
	}}}}
	if model.GetVendor() == modelv1.Vendor_VENDOR_REPLAY {
		first = append(first, &agentv1.Metadata{Kind: &agentv1.Metadata_Notice{Notice: &agentv1.Notice{
			Text: "This is the demo model: it replays recorded turns and only builds its one room. Set a vendor API key and pick a real model to automate your document."}}})
	}
	chunks := make([]*agentv1.StreamChunk, len(first))
	for i, md := range first {
		chunks[i] = &agentv1.StreamChunk{Seq: int64(i + 1), RunId: runID, SessionId: sessionID, Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}}
	}
	// The run's state, its history row, the transcript with the prompt and
	// the log's first chunks do not depend on each other, so they are
	// written side by side: a start waits for the slowest, not for the sum
	// (every run of a burst starting at once waits for each of its writes
	// behind the others'). The lease, which makes the run claimable, comes
	// only once all are in.
	var msgs []*modelv1.Message
	var cancelled <-chan struct{}
	stopWatch := func() {}
	steps := []struct {
		what string
		do   func() error
	}{
		{"save run", func() error { return s.store.SaveRun(ctx, rs) }},
		{"record the run", func() error { return s.recordRunStart(ctx, rs, prompt) }},
		{"save transcript", func() error {
			read, err := s.store.Transcript(ctx, sessionID)
			if err != nil {
				return fmt.Errorf("read transcript: %w", err)
			}
			msgs = runner.AppendPrompt(read, prompt)
			return s.store.SaveTranscript(ctx, sessionID, msgs)
		}},
		{"log the run's start", func() error { return s.store.Append(ctx, runID, chunks...) }},
		// The worker's cancel watch, set here beside the writes: a cancel
		// can only come once the run's id is out, after this.
		{"watch for a cancel", func() error {
			done, stop, err := s.store.Cancelled(ctx, runID)
			if err == nil {
				cancelled, stopWatch = done, stop
			}
			return err
		}},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() { errs[i] = st.do() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			stopWatch()
			return fail(steps[i].what, err)
		}
	}
	lease := state.Lease{RunID: runID, SessionID: sessionID, Owner: s.replica}
	if err := s.store.Acquire(ctx, lease, s.cfg.limits().LeaseTTL()); err != nil {
		stopWatch()
		return fail("acquire run lease", err)
	}
	s.env.Log.Info("run started", "session", sessionID, "run", runID, "model", model.GetId(), "host", sess.GetHostApp())
	s.metrics.RunStarted(ctx, model.GetId())
	// The worker goes on from what the start wrote and read, and reads
	// none of it again before its first model turn.
	s.launch(lease, runner.Started(rs, msgs, int64(len(chunks)), sess, cancelled, stopWatch))
	return runID, nil
}

// clearActiveRun leaves the session ready for the next run.
// A store outage delays it, within ctx.
func (s *Service) clearActiveRun(ctx context.Context, sessionID, runID string) {
	_, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return s.store.Update(ctx, sessionID, func(x *agentv1.Session) error {
			if x.GetActiveRunId() == runID {
				x.ActiveRunId = ""
				x.UpdateTime = timestamppb.New(s.now())
			}
			if x.GetPendingToolCall().GetRunId() == runID {
				x.PendingToolCall = nil
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		s.env.Log.Error("clear active run", "session", sessionID, "run", runID, "err", err)
	}
}
