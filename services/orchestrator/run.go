package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/services/orchestrator/state"
)

// Causes that end a run early; each becomes the code of its error chunk.
const (
	errCancelled  = state.Error("the run was cancelled")
	errClientGone = state.Error("the client that started the run went away")
	errLeaseLost  = state.Error("this replica lost the run's lease")
	// errToolInputCut means a turn ended inside a tool call's arguments.
	errToolInputCut = state.Error("the model's tool call was cut off before its arguments were complete")
)

// cleanupTimeout bounds the work done after a run's context ended: the last
// chunks, clearing the session and releasing the lease.
const cleanupTimeout = 10 * time.Second

// runError is a failure that ends a run with an error chunk.
type runError struct {
	code      string
	message   string
	retryable bool
}

func (e *runError) Error() string { return e.code + ": " + e.message }

// runner is one run's loop and what it keeps between turns. Session state
// that must survive the run lives in the store; the transcript is the rest.
type runner struct {
	s      *Service
	stream agentv1.OrchestratorService_RunServer
	log    *slog.Logger
	cancel context.CancelCauseFunc

	sessionID string
	runID     string
	owner     string
	hostApp   string
	host      *capabilityv1.HostProvider
	model     *modelv1.ModelInfo
	system    string
	msgs      []*modelv1.Message

	seq      int64
	attached bool
	total    *modelv1.Usage
	turns    int
	// automations counts automations dispatched in this run: the first one is
	// neither a fix nor an iteration.
	automations int
	// capped is set once a budget refused an automation; the run then only
	// summarises.
	capped bool
}

// Run starts a run on the caller's session and streams it until it ends. The
// client going away cancels the run; followers (StreamRunEvents) do not.
func (s *Service) Run(req *agentv1.RunRequest, stream agentv1.OrchestratorService_RunServer) error {
	ctx := stream.Context()
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(req.GetPrompt())
	if prompt == "" {
		return status.Error(codes.InvalidArgument, "prompt is required: say what should be done")
	}
	modelID := req.GetModel()
	if modelID == "" {
		modelID = sess.GetModel()
	}
	model, err := s.resolveModel(ctx, modelID)
	if err != nil {
		return err
	}

	runID := newID("r_")
	sess, err = s.store.Update(ctx, sess.GetSessionId(), func(x *agentv1.Session) error {
		if x.GetActiveRunId() != "" {
			return state.ErrRunActive
		}
		x.ActiveRunId = runID
		x.LastRunId = runID
		x.Model = model.GetId()
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
		return status.Errorf(codes.FailedPrecondition, "session %s already has an active run; cancel it or wait for it to end", req.GetSessionId())
	}
	if err != nil {
		return status.Errorf(codes.Unavailable, "start run: %v", err)
	}

	log := s.env.Log.With("session", sess.GetSessionId(), "run", runID)
	lease := state.Lease{RunID: runID, SessionID: sess.GetSessionId(), Owner: s.replica}
	if err := s.store.Acquire(ctx, lease, s.cfg.leaseTTL()); err != nil {
		s.clearActiveRun(context.WithoutCancel(ctx), sess.GetSessionId(), runID)
		return status.Errorf(codes.Unavailable, "acquire run lease: %v", err)
	}

	runCtx, cancel := context.WithCancelCause(logging.WithLogger(ctx, log))
	defer cancel(nil)
	ctx, span := s.env.Tel.Tracer(ServiceName).Start(runCtx, "run")
	defer span.End()

	r := &runner{
		s: s, stream: stream, log: log, cancel: cancel,
		sessionID: sess.GetSessionId(), runID: runID, owner: identity.FromIncoming(ctx),
		hostApp: sess.GetHostApp(), model: model, attached: true, total: &modelv1.Usage{},
	}
	go s.renewLease(ctx, lease, cancel, log)
	if done, stop, err := s.store.Cancelled(ctx, runID); err != nil {
		log.Warn("watch cancel signal", "err", err)
	} else {
		defer stop()
		go func() {
			select {
			case <-done:
				cancel(errCancelled)
			case <-ctx.Done():
			}
		}()
	}

	log.Info("run started", "model", model.GetId(), "host", sess.GetHostApp())
	s.metrics.runStarted(ctx, model.GetId())
	err = r.loop(ctx, prompt)
	r.finish(ctx, err, lease)
	return nil
}

// renewLease keeps the run's lease alive and ends the run when it is lost.
func (s *Service) renewLease(ctx context.Context, l state.Lease, cancel context.CancelCauseFunc, log *slog.Logger) {
	t := time.NewTicker(max(s.cfg.RunLease/3, time.Millisecond))
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
		case err != nil && ctx.Err() == nil:
			log.Warn("renew run lease", "err", err)
		}
	}
}

// clearActiveRun leaves the session ready for the next run.
func (s *Service) clearActiveRun(ctx context.Context, sessionID, runID string) {
	_, err := s.store.Update(ctx, sessionID, func(x *agentv1.Session) error {
		if x.GetActiveRunId() == runID {
			x.ActiveRunId = ""
		}
		if x.GetPendingToolCall().GetRunId() == runID {
			x.PendingToolCall = nil
		}
		return nil
	})
	if err != nil {
		s.env.Log.Error("clear active run", "session", sessionID, "run", runID, "err", err)
	}
}

// finish ends the run: the final usage and the error chunk when it did not
// complete, then the session, the mailbox, the event log and the lease.
func (r *runner) finish(ctx context.Context, loopErr error, lease state.Lease) {
	cause := context.Cause(ctx)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if loopErr != nil {
		re := r.asRunError(loopErr, cause)
		r.log.Info("run ended without complete", "code", re.code, "err", re.message)
		r.s.metrics.runEnded(cctx, r.model.GetId(), re.code)
		r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(nil, true)}})
		r.emitTo(cctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
			Code: re.code, Message: re.message, Retryable: re.retryable,
		}}})
	} else {
		r.log.Info("run completed", "turns", r.turns)
		r.s.metrics.runEnded(cctx, r.model.GetId(), "")
	}
	if !errors.Is(cause, errLeaseLost) {
		// After losing the lease the run belongs to whoever took it.
		if err := r.s.store.CloseMailbox(cctx, r.sessionID); err != nil {
			r.log.Warn("close mailbox", "err", err)
		}
		r.s.clearActiveRun(cctx, r.sessionID, r.runID)
		if err := r.s.store.Release(cctx, lease); err != nil {
			r.log.Warn("release run lease", "err", err)
		}
	}
	if err := r.s.store.Finish(cctx, r.runID); err != nil {
		r.log.Warn("finish event log", "err", err)
	}
}

func (r *runner) asRunError(err, cause error) *runError {
	var re *runError
	switch {
	case errors.Is(cause, errCancelled):
		return &runError{"cancelled", "The run was cancelled. The session is ready for the next run.", true}
	case errors.Is(cause, errClientGone), errors.Is(cause, context.Canceled):
		return &runError{"cancelled", "The client that started the run went away, so the run stopped. The session is ready for the next run.", true}
	case errors.Is(cause, errLeaseLost):
		return &runError{"lease_lost", "This orchestrator replica lost the run's lease, so the run stopped. Start the run again.", true}
	case errors.As(err, &re):
		return re
	case errors.Is(err, errToolInputCut):
		return &runError{"max_tokens", "The model ran out of its output budget in the middle of a tool call, even with the heavy budget (NEXUS_HEAVY_MAX_TOKENS). Ask for smaller steps, or raise the budget.", true}
	}
	return &runError{"internal", err.Error(), true}
}

// emit stamps c with the next seq, appends it to the run's event log and then
// sends it to the client that started the run, if it is still there.
func (r *runner) emit(ctx context.Context, c *agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.emitTo(ctx, c)
}

func (r *runner) emitTo(ctx context.Context, c *agentv1.StreamChunk) error {
	r.seq++
	c.Seq = r.seq
	c.RunId = r.runID
	c.SessionId = r.sessionID
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.s.store.Append(actx, r.runID, c); err != nil {
		return &runError{"state_unavailable", fmt.Sprintf("append event %d of run %s: %v", c.Seq, r.runID, err), true}
	}
	if r.attached {
		if err := r.stream.Send(c); err != nil {
			r.attached = false
			r.cancel(errClientGone)
		}
	}
	return nil
}

func (r *runner) metadata(ctx context.Context, md *agentv1.Metadata) error {
	return r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}})
}

// usage returns the run's accounting so far.
func (r *runner) usage(turn *modelv1.Usage, final bool) *agentv1.Usage {
	return &agentv1.Usage{Model: r.model.GetId(), Total: cloneUsage(r.total), Turn: turn, Turns: int32(r.turns), Final: final}
}

func cloneUsage(u *modelv1.Usage) *modelv1.Usage {
	return &modelv1.Usage{
		InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(),
		CacheReadTokens: u.GetCacheReadTokens(), CacheWriteTokens: u.GetCacheWriteTokens(),
		ReasoningTokens: u.GetReasoningTokens(), CostUsd: u.GetCostUsd(),
	}
}

func addUsage(total, u *modelv1.Usage) {
	total.InputTokens += u.GetInputTokens()
	total.OutputTokens += u.GetOutputTokens()
	total.CacheReadTokens += u.GetCacheReadTokens()
	total.CacheWriteTokens += u.GetCacheWriteTokens()
	total.ReasoningTokens += u.GetReasoningTokens()
	total.CostUsd += u.GetCostUsd()
}

// loop is the agentic loop: stream a turn; no tool call means complete;
// otherwise run the tools, append the assistant turn and the results, and go
// again. The transcript is the state machine.
func (r *runner) loop(ctx context.Context, prompt string) error {
	if err := r.metadata(ctx, &agentv1.Metadata{Kind: agentv1.MetadataKind_METADATA_KIND_RUN_STARTED, Model: r.model.GetId(), HostApp: r.hostApp}); err != nil {
		return err
	}
	if r.model.GetVendor() == "replay" {
		if err := r.metadata(ctx, &agentv1.Metadata{Kind: agentv1.MetadataKind_METADATA_KIND_NOTICE, Model: r.model.GetId(),
			Text: "This is the demo model: it replays recorded turns and does not read your request. Set a vendor API key and pick a real model to automate your document."}); err != nil {
			return err
		}
	}
	if err := r.prepare(ctx, prompt); err != nil {
		return err
	}
	for {
		if r.turns >= r.s.cfg.MaxTurns {
			return &runError{"turn_limit", fmt.Sprintf("the run reached its limit of %d model turns (NEXUS_MAX_TURNS) without an answer; ask again with a narrower request", r.s.cfg.MaxTurns), false}
		}
		if err := r.maybeCompact(ctx); err != nil {
			return err
		}
		sess, err := r.s.store.Get(ctx, r.sessionID)
		if err != nil {
			return r.stateErr(ctx, "read session", err)
		}
		ph := resolvePhase(sess, r.capped)
		maxTokens := r.clampBudget(r.s.cfg.budget(ph))
		end, cutInTool, err := r.turn(ctx, ph, maxTokens)
		heavy := r.clampBudget(r.s.cfg.HeavyMaxTokens)
		if cutInTool && maxTokens < heavy && (errors.Is(err, errToolInputCut) || err == nil && end.GetStopReason() == modelv1.StopReason_STOP_REASON_MAX_TOKENS) {
			if err := r.metadata(ctx, &agentv1.Metadata{Kind: agentv1.MetadataKind_METADATA_KIND_TURN_RETRIED, Model: r.model.GetId(), Phase: string(ph), MaxTokens: int32(heavy),
				Text: fmt.Sprintf("The %s turn ran out of its light output budget (%d tokens) in the middle of a tool call; it is redone once with the heavy budget (%d tokens).", ph, maxTokens, heavy)}); err != nil {
				return err
			}
			end, _, err = r.turn(ctx, ph, heavy)
		}
		if err != nil {
			return err
		}
		msg := end.GetMessage()
		if msg == nil {
			msg = &modelv1.Message{}
		}
		msg.Role = modelv1.Role_ROLE_ASSISTANT
		r.msgs = append(r.msgs, msg)
		if err := r.save(ctx); err != nil {
			return err
		}

		uses := toolUses(msg)
		if len(uses) == 0 {
			if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(nil, true)}}); err != nil {
				return err
			}
			return r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Complete{Complete: &agentv1.Complete{
				Text: messageText(msg), StopReason: stopReasonName(end.GetStopReason()),
			}}})
		}
		results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
		var stopErr error
		for _, u := range uses {
			if stopErr != nil {
				// Every call gets a result, so the transcript stays valid for the
				// next run even when this one stops here.
				results.Content = append(results.Content, toolResult(&modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
					Text: "Not run: the run stopped before this call."}))
				continue
			}
			res, err := r.execute(ctx, u)
			if res != nil {
				results.Content = append(results.Content, toolResult(res))
			}
			stopErr = err
		}
		r.msgs = append(r.msgs, results)
		if err := r.save(ctx); err != nil {
			return err
		}
		if stopErr != nil {
			return stopErr
		}
	}
}

// clampBudget keeps a budget within what the model can produce.
func (r *runner) clampBudget(n int) int {
	if m := int(r.model.GetMaxOutputTokens()); m > 0 && n > m {
		return m
	}
	return n
}

// stateErr reports a store failure, or the cause when the run was stopped.
func (r *runner) stateErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &runError{"state_unavailable", fmt.Sprintf("%s: %v", what, err), true}
}

func (r *runner) save(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.s.store.SaveTranscript(sctx, r.sessionID, r.msgs); err != nil {
		return &runError{"state_unavailable", fmt.Sprintf("save transcript: %v", err), true}
	}
	return nil
}

// prepare builds the system prompt and appends the prompt to the transcript.
func (r *runner) prepare(ctx context.Context, prompt string) error {
	g, err := r.s.capability.GetGuidance(ctx, &capabilityv1.GetGuidanceRequest{HostApp: r.hostApp})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &runError{"capability_unavailable", fmt.Sprintf("get prompt guidance for host %q from the capability service: %v", r.hostApp, status.Convert(err).Message()), true}
	}
	r.host = g.GetHost()
	r.system = systemPrompt(g.GetHost().GetDisplayName(), g.GetGuidance())
	msgs, err := r.s.store.Transcript(ctx, r.sessionID)
	if err != nil {
		return r.stateErr(ctx, "read transcript", err)
	}
	r.msgs = appendPrompt(msgs, prompt)
	return r.save(ctx)
}

// appendPrompt adds the person's prompt to the transcript. Calls left without
// a result by an earlier run that died get one, and a trailing user message
// (results of a run that was cancelled) takes the prompt as well, so roles
// keep alternating.
func appendPrompt(msgs []*modelv1.Message, prompt string) []*modelv1.Message {
	text := &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: prompt}}}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_ASSISTANT {
		if uses := toolUses(msgs[n-1]); len(uses) > 0 {
			m := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
			for _, u := range uses {
				m.Content = append(m.Content, toolResult(&modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
					Text: "No result: the run stopped before this call was answered."}))
			}
			msgs = append(msgs, m)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_USER {
		msgs[n-1].Content = append(msgs[n-1].Content, text)
		return msgs
	}
	return append(msgs, &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{text}})
}

// turn streams one model turn straight through to the client. cutInTool says
// whether the model was writing a tool call when the turn ended.
func (r *runner) turn(ctx context.Context, ph phase, maxTokens int) (*modelv1.TurnEnd, bool, error) {
	if err := r.metadata(ctx, &agentv1.Metadata{Kind: agentv1.MetadataKind_METADATA_KIND_TURN_STARTED, Model: r.model.GetId(), Phase: string(ph), MaxTokens: int32(maxTokens)}); err != nil {
		return nil, false, err
	}
	r.turns++
	tm := r.s.metrics.turnStarted(ctx, r.model.GetId())
	stream, err := r.s.router.StreamTurn(ctx, &modelv1.StreamTurnRequest{
		Model: r.model.GetId(), System: r.system, Messages: r.msgs, Tools: toolSpecs(),
		MaxTokens: int32(maxTokens), SessionId: r.sessionID, AllowCompaction: hasFeature(r.model, "compaction"),
	})
	if err != nil {
		return nil, false, r.routerErr(ctx, err)
	}
	inTool := false
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil, false, &runError{"model_error", "the model-router ended the turn without its end event", true}
		}
		if err != nil {
			return nil, false, r.routerErr(ctx, err)
		}
		tm.event(ctx, resp)
		var c *agentv1.StreamChunk
		switch ev := resp.GetEvent().(type) {
		case *modelv1.StreamTurnResponse_Thinking:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: ev.Thinking.GetText()}}}
		case *modelv1.StreamTurnResponse_Text:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: ev.Text.GetText()}}}
		case *modelv1.StreamTurnResponse_ToolInputDelta:
			inTool = true
			d := ev.ToolInputDelta
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{
				ToolCallId: d.GetToolCallId(), ToolName: d.GetToolName(), PartialJson: d.GetPartialJson(),
			}}}
		case *modelv1.StreamTurnResponse_Compacted:
			r.s.metrics.compaction(ctx, "vendor")
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{
				Kind: agentv1.MetadataKind_METADATA_KIND_CONTEXT_SUMMARIZED, Model: r.model.GetId(),
				Text: strings.TrimSpace("Context summarized by the model vendor. " + ev.Compacted.GetNote()),
			}}}
		case *modelv1.StreamTurnResponse_Error:
			e := ev.Error
			if inTool && e.GetCode() == "bad_tool_input" {
				// The output budget ran out in the middle of the tool call's JSON.
				return nil, true, fmt.Errorf("%w: %s", errToolInputCut, e.GetMessage())
			}
			return nil, false, &runError{e.GetCode(), "the model turn failed: " + e.GetMessage(), e.GetRetryable()}
		case *modelv1.StreamTurnResponse_End:
			end := ev.End
			addUsage(r.total, end.GetUsage())
			tm.ended(ctx, end.GetUsage())
			if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(end.GetUsage(), false)}}); err != nil {
				return nil, false, err
			}
			if inTool || len(toolUses(end.GetMessage())) > 0 {
				inTool = true
			}
			return end, inTool, nil
		}
		if c != nil {
			if err := r.emit(ctx, c); err != nil {
				return nil, false, err
			}
		}
	}
}

func (r *runner) routerErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	st := status.Convert(err)
	retryable := st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted || st.Code() == codes.DeadlineExceeded
	return &runError{"model_error", fmt.Sprintf("model turn through the model-router failed (%s): %s", st.Code(), st.Message()), retryable}
}

func hasFeature(m *modelv1.ModelInfo, f string) bool {
	for _, x := range m.GetFeatures() {
		if x == f {
			return true
		}
	}
	return false
}

func toolUses(m *modelv1.Message) []*modelv1.ToolUseBlock {
	var out []*modelv1.ToolUseBlock
	for _, b := range m.GetContent() {
		if u := b.GetToolUse(); u != nil {
			out = append(out, u)
		}
	}
	return out
}

func messageText(m *modelv1.Message) string {
	var parts []string
	for _, b := range m.GetContent() {
		if t := b.GetText(); t != nil {
			parts = append(parts, t.GetText())
		}
	}
	return strings.Join(parts, "")
}

func toolResult(b *modelv1.ToolResultBlock) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolResult{ToolResult: b}}
}

func stopReasonName(r modelv1.StopReason) string {
	switch r {
	case modelv1.StopReason_STOP_REASON_END_TURN:
		return "end_turn"
	case modelv1.StopReason_STOP_REASON_MAX_TOKENS:
		return "max_tokens"
	case modelv1.StopReason_STOP_REASON_REFUSAL:
		return "refusal"
	case modelv1.StopReason_STOP_REASON_TOOL_USE:
		return "tool_use"
	}
	return "end_turn"
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func cloneMessages(msgs []*modelv1.Message) []*modelv1.Message {
	out := make([]*modelv1.Message, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*modelv1.Message)
	}
	return out
}
