package call

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
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
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

const (
	// scopeAuditAndHistory: the call ended; both learn how.
	scopeAuditAndHistory outcomeScope = iota
	// scopeAuditOnly: one sending ended (the host refused it) while the
	// call goes on; its end goes to the history later.
	scopeAuditOnly
)

// Outbox writes the records of this replica's decisions at once and, in
// its sweep, those of every replica that left some.
type Outbox struct {
	s     OutboxDeps
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

// OutboxDeps is what the outbox reads its records from and writes them to.
type OutboxDeps struct {
	Store      state.Store
	Log        *slog.Logger
	Now        func() time.Time
	Capability capabilityv1.CapabilityServiceClient
	// History is the run history's database.
	History *sqlstore.DB
}

// StartOutbox starts the outbox's drainers and its sweep, until Close.
func StartOutbox(base context.Context, s OutboxDeps) *Outbox {
	ctx, stop := context.WithCancel(base)
	o := &Outbox{s: s, kicks: make(chan string, outboxKicks), locks: map[string]*sessionDrain{}, stop: stop}
	for range outboxDrainers {
		o.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-o.kicks:
					if err := o.drain(ctx, id); err != nil && ctx.Err() == nil {
						s.Log.Warn("write tool call outcomes", "session", id, "err", err)
					}
				}
			}
		})
	}
	o.wg.Go(func() { o.sweep(ctx) })
	return o
}

func (o *Outbox) Close() {
	o.stop()
	o.wg.Wait()
}

// kick asks for the session's records to be written now.
func (o *Outbox) kick(sessionID string) {
	select {
	case o.kicks <- sessionID:
	default:
	}
}

// Flush writes the session's records before the caller goes on: before a
// dispatch is audited (an outcome belongs to the sending before it), and
// before a run suspends or ends, so what the run did is in the audit log
// when its followers hear of it.
func (o *Outbox) Flush(ctx context.Context, sessionID string) error {
	return o.drain(ctx, sessionID)
}

func (o *Outbox) lock(sessionID string) func() {
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
func (o *Outbox) drain(ctx context.Context, sessionID string) error {
	unlock := o.lock(sessionID)
	defer unlock()
	recs, err := state.RetryStore(ctx, func(ctx context.Context) ([]state.OutboxRecord, error) {
		return o.s.Store.Outboxed(ctx, sessionID, outboxBatch)
	})
	if err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	var done []string
	var failed error
	for _, rec := range recs {
		if failed = o.writeOutcome(ctx, rec); failed != nil {
			break
		}
		done = append(done, rec.ID)
	}
	if len(done) > 0 {
		if err := state.Retry(ctx, func(ctx context.Context) error { return o.s.Store.DoneOutbox(ctx, sessionID, done...) }); err != nil {
			return errors.Join(failed, fmt.Errorf("remove written outcomes: %w", err))
		}
	}
	return failed
}

// sweep writes the records that stayed past their grace: their replica
// stopped, or the audit log or history was away.
func (o *Outbox) sweep(ctx context.Context) {
	t := time.NewTicker(outboxSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, err := o.s.Store.Outboxed(ctx, "", outboxBatch)
		if err != nil {
			if ctx.Err() == nil {
				o.s.Log.Warn("read the outbox", "err", err)
			}
			continue
		}
		due := map[string]bool{}
		for _, rec := range recs {
			var b outcomeBody
			if json.Unmarshal(rec.Body, &b) != nil || o.s.Now().Sub(time.Unix(0, b.At)) >= outboxGrace {
				due[rec.SessionID] = true
			}
		}
		for id := range due {
			if err := o.drain(ctx, id); err != nil && ctx.Err() == nil {
				o.s.Log.Warn("write tool call outcomes", "session", id, "err", err)
			}
		}
	}
}

// writeOutcome appends how a dispatched tool call ended to the audit log
// (for scripts) and, when the call ended, to the run history. Writing a
// record again changes nothing. A record that can never be written (it
// does not decode, or the audit log holds another end for the sending) is
// logged and dropped rather than blocking the session's later records.
func (o *Outbox) writeOutcome(ctx context.Context, rec state.OutboxRecord) error {
	var b outcomeBody
	if err := json.Unmarshal(rec.Body, &b); err != nil {
		o.s.Log.Error("drop an outcome record that does not decode", "session", rec.SessionID, "record", rec.ID, "err", err)
		return nil
	}
	content := rec.Delivery
	_, isReview := AsReviewDecision(content)
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
		_, err := o.s.Capability.RecordOutcome(ctx, req)
		switch status.Code(err) {
		case codes.OK:
		case codes.AlreadyExists, codes.InvalidArgument:
			o.s.Log.Warn("the audit log refused this outcome; dropping it", "session", rec.SessionID, "run", b.RunID,
				"tool_call", b.ToolCallID, "outcome", name, "err", status.Convert(err).Message())
		default:
			return fmt.Errorf("audit log: %s", status.Convert(err).Message())
		}
	}
	if b.Scope == scopeAuditOnly {
		return nil
	}
	if err := o.s.History.RecordToolCall(ctx, sqlstore.ToolCall{
		SessionID: rec.SessionID, RunID: b.RunID, ToolCallID: b.ToolCallID, ToolName: b.ToolName, Outcome: name, ErrorType: errType, At: time.Unix(0, b.At),
	}); err != nil {
		return fmt.Errorf("run history: %w", err)
	}
	return nil
}
