package orchestrator

// This file drains the outbox: how each tool call ended reaches the audit
// log and the run history after the store step that decided it, off the
// path between a result and the next model turn. A record is put in the
// same step as the decision (so no outcome is lost when a replica stops
// right after it), written by this replica at once, and by any replica's
// sweep when the one that put it could not; both writes are idempotent, so
// a record written twice is still one row.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/sqlstore"
	"nexus.local/services/orchestrator/state"
)

const (
	// outboxSweepEvery is how often a replica looks for records that their
	// own replica did not write.
	outboxSweepEvery = 2 * time.Second
	// outboxGrace leaves a record to the replica that put it for this long,
	// so that a sweep does not race the writer it stands in for.
	outboxGrace = 10 * time.Second
	// outboxBatch bounds one read of the outbox.
	outboxBatch = 100
	// outboxDrainers is how many sessions a replica drains at once.
	outboxDrainers = 4
	// outboxKicks is how many sessions may wait for a drainer; a kick that
	// finds the queue full is left to the sweep.
	outboxKicks = 1024
)

// outcomeScope says where an outcome record goes.
type outcomeScope int

const (
	// scopeAuditAndHistory: the call ended; both learn how.
	scopeAuditAndHistory outcomeScope = iota
	// scopeAuditOnly: one sending ended (the host refused it) while the
	// call goes on; its end goes to the history later.
	scopeAuditOnly
)

// outcomeBody is what an outbox record asks to write.
type outcomeBody struct {
	RunID      string                  `json:"run"`
	ToolCallID string                  `json:"call"`
	ToolName   string                  `json:"tool"`
	Kind       capabilityv1.ScriptKind `json:"kind"`
	Scope      outcomeScope            `json:"scope"`
	// AwaitingReview: the call waited for a person, so what answered it is
	// no host result.
	AwaitingReview bool   `json:"awaiting_review,omitempty"`
	Reviewer       string `json:"reviewer,omitempty"`
	// ReviewTime and At are unix nanoseconds; ReviewTime 0 is none.
	ReviewTime int64 `json:"review_time,omitempty"`
	At         int64 `json:"at"`
	// Attempt is the audit log's number of the sending that ended (0: the
	// latest, as records put before attempts were kept say). Named, so that
	// a record written after the call was sent again, by a sweep standing
	// in for the replica that decided, ends the sending it describes.
	Attempt int32 `json:"attempt,omitempty"`
}

// outcomeRecord is the record of b, how step tag of the pending call p
// ended: of p's sending, unless b names another call (and its attempt).
// Its id is the same when a replica redoes the step.
func (r *runner) outcomeRecord(p *orchestratorv1.PendingCall, tag string, b outcomeBody) state.OutboxRecord {
	if b.ToolCallID == "" {
		// A record of another call than p's names its attempt itself.
		b.ToolCallID, b.Attempt = p.GetToolCall().GetToolCallId(), p.GetAttempt()
	}
	b.RunID, b.Kind, b.At = r.runID, p.GetKind(), r.s.now().UnixNano()
	body, err := json.Marshal(b)
	if err != nil {
		// A struct of strings and numbers always encodes.
		body = nil
	}
	return state.OutboxRecord{
		ID:        fmt.Sprintf("%s/%s/%s/%d", r.runID, b.ToolCallID, tag, p.GetPreviews()),
		SessionID: r.sessionID, Body: body,
	}
}

// reviewed adds who declined, and when, to b.
func (b outcomeBody) reviewed(dec *orchestratorv1.ReviewDecision) outcomeBody {
	b.Reviewer = dec.GetReviewer()
	if t := dec.GetDecideTime(); t != nil {
		b.ReviewTime = t.AsTime().UnixNano()
	}
	return b
}

// outbox writes the records of this replica's decisions at once and, in
// its sweep, those of every replica that left some.
type outbox struct {
	s     *Service
	kicks chan string

	mu    sync.Mutex
	locks map[string]*sessionDrain

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// sessionDrain serialises the drains of one session on this replica, so a
// run that flushes before its next dispatch waits for a drain under way.
type sessionDrain struct {
	mu    sync.Mutex
	users int
}

func startOutbox(base context.Context, s *Service) *outbox {
	ctx, stop := context.WithCancel(base)
	o := &outbox{s: s, kicks: make(chan string, outboxKicks), locks: map[string]*sessionDrain{}, stop: stop}
	for range outboxDrainers {
		o.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-o.kicks:
					if err := o.drain(ctx, id); err != nil && ctx.Err() == nil {
						s.env.Log.Warn("write tool call outcomes", "session", id, "err", err)
					}
				}
			}
		})
	}
	o.wg.Go(func() { o.sweep(ctx) })
	return o
}

func (o *outbox) close() {
	o.stop()
	o.wg.Wait()
}

// kick asks for the session's records to be written now.
func (o *outbox) kick(sessionID string) {
	select {
	case o.kicks <- sessionID:
	default:
	}
}

// flush writes the session's records before the caller goes on: before a
// dispatch is audited (an outcome belongs to the sending before it), and
// before a run suspends or ends, so what the run did is in the audit log
// when its followers hear of it.
func (o *outbox) flush(ctx context.Context, sessionID string) error {
	return o.drain(ctx, sessionID)
}

func (o *outbox) lock(sessionID string) func() {
	o.mu.Lock()
	l := o.locks[sessionID]
	if l == nil {
		l = &sessionDrain{}
		o.locks[sessionID] = l
	}
	l.users++
	o.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		o.mu.Lock()
		l.users--
		if l.users == 0 {
			delete(o.locks, sessionID)
		}
		o.mu.Unlock()
	}
}

// drain writes the session's records in order and removes those written;
// it stops at the first that cannot be written, which stays for later.
func (o *outbox) drain(ctx context.Context, sessionID string) error {
	unlock := o.lock(sessionID)
	defer unlock()
	recs, err := retryStore(ctx, func(ctx context.Context) ([]state.OutboxRecord, error) {
		return o.s.store.Outboxed(ctx, sessionID, outboxBatch)
	})
	if err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	var done []string
	var failed error
	for _, rec := range recs {
		if failed = o.s.writeOutcome(ctx, rec); failed != nil {
			break
		}
		done = append(done, rec.ID)
	}
	if len(done) > 0 {
		if err := retry(ctx, func(ctx context.Context) error { return o.s.store.DoneOutbox(ctx, sessionID, done...) }); err != nil {
			return errors.Join(failed, fmt.Errorf("remove written outcomes: %w", err))
		}
	}
	return failed
}

// sweep writes the records that stayed past their grace: their replica
// stopped, or the audit log or history was away.
func (o *outbox) sweep(ctx context.Context) {
	t := time.NewTicker(outboxSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, err := o.s.store.Outboxed(ctx, "", outboxBatch)
		if err != nil {
			if ctx.Err() == nil {
				o.s.env.Log.Warn("read the outbox", "err", err)
			}
			continue
		}
		due := map[string]bool{}
		for _, rec := range recs {
			var b outcomeBody
			if json.Unmarshal(rec.Body, &b) != nil || o.s.now().Sub(time.Unix(0, b.At)) >= outboxGrace {
				due[rec.SessionID] = true
			}
		}
		for id := range due {
			if err := o.drain(ctx, id); err != nil && ctx.Err() == nil {
				o.s.env.Log.Warn("write tool call outcomes", "session", id, "err", err)
			}
		}
	}
}

// writeOutcome appends how a dispatched tool call ended to the audit log
// (for scripts) and, when the call ended, to the run history. Writing a
// record again changes nothing. A record that can never be written (it
// does not decode, or the audit log holds another end for the sending) is
// logged and dropped rather than blocking the session's later records.
func (s *Service) writeOutcome(ctx context.Context, rec state.OutboxRecord) error {
	var b outcomeBody
	if err := json.Unmarshal(rec.Body, &b); err != nil {
		s.env.Log.Error("drop an outcome record that does not decode", "session", rec.SessionID, "record", rec.ID, "err", err)
		return nil
	}
	content := rec.Delivery
	_, isReview := asReviewDecision(content)
	noResult := content == nil || isReview || b.AwaitingReview
	_, errType, name := toolOutcome(b.Kind, content, noResult)
	if b.Kind != capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED {
		outcome, _, _ := toolOutcome(b.Kind, content, noResult)
		req := &capabilityv1.RecordOutcomeRequest{
			SessionId: rec.SessionID, RunId: b.RunID, ToolCallId: b.ToolCallID, Outcome: outcome, ErrorType: errType, Reviewer: b.Reviewer,
			Attempt: b.Attempt,
		}
		if b.ReviewTime != 0 {
			req.ReviewTime = timestamppb.New(time.Unix(0, b.ReviewTime))
		}
		_, err := s.capability.RecordOutcome(ctx, req)
		switch status.Code(err) {
		case codes.OK:
		case codes.AlreadyExists, codes.InvalidArgument:
			s.env.Log.Warn("the audit log refused this outcome; dropping it", "session", rec.SessionID, "run", b.RunID,
				"tool_call", b.ToolCallID, "outcome", name, "err", status.Convert(err).Message())
		default:
			return fmt.Errorf("audit log: %s", status.Convert(err).Message())
		}
	}
	if b.Scope == scopeAuditOnly {
		return nil
	}
	if err := s.history.db.RecordToolCall(ctx, sqlstore.ToolCall{
		SessionID: rec.SessionID, RunID: b.RunID, ToolCallID: b.ToolCallID, ToolName: b.ToolName, Outcome: name, ErrorType: errType, At: time.Unix(0, b.At),
	}); err != nil {
		return fmt.Errorf("run history: %w", err)
	}
	return nil
}
