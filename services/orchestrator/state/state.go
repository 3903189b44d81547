// Package state declares everything the orchestrator keeps, so that replicas
// stay stateless and a run is a durable job rather than a goroutine: session
// state and transcripts, each run's progress, the tool-result mailbox, cancel
// signals, each run's event log, and the schedule of unfinished runs.
//
// Three implementations satisfy these interfaces: state/sqlitestate (one
// process on its SQLite file, the default for nexus dev), state/redisstate
// (any number of replicas) and state/memory (one process, nothing kept past
// it). All pass the same conformance suite in state/statetest.
package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
)

// Error is a state error that can be a constant.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrNotFound means the session or run does not exist (or, to its caller,
	// belongs to someone else).
	ErrNotFound = Error("not found")
	// ErrNoPendingCall means a result named a tool call the session is not
	// waiting on and never decided.
	ErrNoPendingCall = Error("no pending tool call with that id")
	// ErrBadToken means a result carried the wrong result token.
	ErrBadToken = Error("result token does not match the tool call")
	// ErrConflict means the call was already decided otherwise: another
	// result was accepted for it, or it was given up (timeout or cancel).
	ErrConflict = Error("the tool call was already decided with another result")
	// ErrRunActive means the session already has an active run.
	ErrRunActive = Error("the session already has an active run")
	// ErrLeaseLost means another owner holds, or took over, a run's lease,
	// or the run is not due to be claimed.
	ErrLeaseLost = Error("run lease lost")
	// ErrUnavailable marks errors of a store that cannot be reached right
	// now (Redis restarting, failing over, a broken network). Runs wait and
	// retry on it; it never fails a run.
	ErrUnavailable = Error("state store unavailable")
	// ErrFull marks a write the store refused because it has no room left
	// (Redis at its maxmemory limit with eviction off). It is also
	// ErrUnavailable: runs wait until an operator makes room.
	ErrFull = Error("the state store is full")
	// ErrEventConflict means a run's event log already holds a different
	// chunk at that seq. The same chunk again is no error: it is a retried
	// append whose first try reached the store.
	ErrEventConflict = Error("another event is already logged at that seq")
)

// Sessions stores each session's small server-side state and its transcript.
type Sessions interface {
	// Create stores a new session; its SessionId must be set and unused.
	Create(ctx context.Context, s *agentv1.Session) error
	// Get returns the session, or ErrNotFound.
	Get(ctx context.Context, sessionID string) (*agentv1.Session, error)
	// Update applies fn to the stored session atomically (no lost update
	// across replicas) and returns the stored result. An error from fn
	// aborts the update and is returned as is.
	Update(ctx context.Context, sessionID string, fn func(*agentv1.Session) error) (*agentv1.Session, error)
	// List returns the owner's sessions, newest first.
	List(ctx context.Context, owner string) ([]*agentv1.Session, error)
	// Transcript returns the session's vendor-neutral transcript.
	Transcript(ctx context.Context, sessionID string) ([]*modelv1.Message, error)
	// SaveTranscript replaces the session's transcript.
	SaveTranscript(ctx context.Context, sessionID string, msgs []*modelv1.Message) error
	// Delete removes every trace of the session: its state, transcript,
	// mailbox and owner index entry, and the event logs and cancel signals of
	// its last run and of runIDs. A missing session is not an error.
	Delete(ctx context.Context, sessionID string, runIDs ...string) error
}

// Delivery is what answered a pending call, taken from a mailbox: a host
// result, a review decision or a courier's failure.
type Delivery struct {
	ToolCallID string
	Content    *orchestratorv1.MailboxDelivery
	// Trace carries the W3C trace context of the request that posted the
	// result, so one trace spans the whole run across replicas.
	Trace map[string]string
}

// Mailbox is the rendezvous between a suspended run and the request that
// carries its tool result, possibly on another replica, possibly minutes
// later. Nobody blocks on it: the request stores the result and wakes the
// run (Leases.Wake); whichever replica claims the run then decides the call.
type Mailbox interface {
	// Expect opens the session's mailbox for one tool call, replacing an
	// older one. Only a result that names callID and carries token is
	// accepted. ttl bounds how long the mailbox is kept.
	Expect(ctx context.Context, sessionID, callID, token string, ttl time.Duration) error
	// Deliver stores the result in one atomic step with its checks. It
	// returns nil when it stored the result, and also when the identical
	// result (same token and bytes) was stored before, so a courier may
	// retry; ErrConflict when the call already has another result or was
	// decided without one; ErrBadToken; ErrNoPendingCall when the call is
	// neither pending nor decided. A refusal changes nothing.
	Deliver(ctx context.Context, sessionID, callID, token string, d Delivery) error
	// Peek returns the delivered result for callID, if any, and leaves the
	// call open.
	Peek(ctx context.Context, sessionID, callID string) (d Delivery, ok bool, err error)
	// Decide closes callID for good and returns its result when one was
	// delivered; otherwise it records that none came, and later results are
	// refused with ErrConflict. Deciding again returns the same answer while
	// the mailbox is open for callID; once it was replaced, ok is false.
	Decide(ctx context.Context, sessionID, callID string) (d Delivery, ok bool, err error)
}

// Signals carries cancel requests to whichever replica runs a run.
type Signals interface {
	// Cancel asks the run to stop.
	Cancel(ctx context.Context, runID string) error
	// Cancelled returns a channel that is closed when runID is cancelled, also
	// when the cancel came before the call; stop releases the watch.
	Cancelled(ctx context.Context, runID string) (done <-chan struct{}, stop func(), err error)
}

// Events is each run's event log, which lets a client rejoin a run from any
// gateway and replay what it missed after its Last-Event-ID.
type Events interface {
	// Append adds chunks in one step, in seq order: the chunks of a model
	// turn that arrived together cost one append, a lone chunk one of its
	// own. Appending the same chunk at a seq already logged succeeds (a retry
	// after a lost answer); a different one gives ErrEventConflict. A
	// refused append writes none of its chunks.
	Append(ctx context.Context, runID string, cs ...*agentv1.StreamChunk) error
	// Finish marks the log complete, once however often it is called;
	// followers return after the last chunk.
	Finish(ctx context.Context, runID string) error
	// Follow calls fn with the chunks with seq > afterSeq, first those
	// already logged and then new ones as they are appended, in seq order,
	// as many at a time as were read together (a chunk appended alone comes
	// alone, at once), until the log is finished (returns nil), fn returns
	// an error, or ctx ends. Unknown runs give ErrNotFound. EachChunk reads
	// them one at a time.
	Follow(ctx context.Context, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error
	// LastSeq returns the seq of the run's last chunk and whether its log is
	// finished; an unknown run gives 0, false, nil. The reaper uses it to end
	// a dead run's stream with the next seq.
	LastSeq(ctx context.Context, runID string) (seq int64, finished bool, err error)
}

// Runs keeps each run's progress outside the transcript, so any replica can
// carry a run on from where it was.
type Runs interface {
	// SaveRun stores the run's state, replacing the last one.
	SaveRun(ctx context.Context, r *orchestratorv1.RunState) error
	// GetRun returns the run's last saved state, or ErrNotFound.
	GetRun(ctx context.Context, runID string) (*orchestratorv1.RunState, error)
}

// Lease names a run and the replica working on it; Owner is empty while the
// run is suspended.
type Lease struct {
	RunID     string
	SessionID string
	// Owner is the replica's id.
	Owner string
}

// Leases schedule the runs that are not finished. Each has an owner while a
// replica works on it and a due time: the owner's lease expiry, or for a
// suspended run its tool-result deadline, or now once it was woken. A due run
// is claimed by exactly one replica, which carries it on. Times are measured
// by the store's clock (Redis TIME), never a replica's.
type Leases interface {
	// Acquire records a new run owned by l.Owner for ttl; ErrLeaseLost when
	// someone else holds it.
	Acquire(ctx context.Context, l Lease, ttl time.Duration) error
	// Renew extends l.Owner's lease by ttl from now, also after it ran out,
	// as long as nobody claimed the run; ErrLeaseLost otherwise.
	Renew(ctx context.Context, l Lease, ttl time.Duration) error
	// Suspend gives up l.Owner's lease: the run has no owner and is due
	// after wait (its tool-result deadline). ErrLeaseLost when l.Owner no
	// longer holds it.
	Suspend(ctx context.Context, l Lease, wait time.Duration) error
	// Wake makes a suspended run due now (its result or a cancel arrived).
	// A run that has an owner is left alone: the owner looks for results and
	// cancels after suspending.
	Wake(ctx context.Context, runID string) error
	// Claim takes a due run for l.Owner for ttl; ErrLeaseLost when it is not
	// due, or gone.
	Claim(ctx context.Context, l Lease, ttl time.Duration) error
	// WakeClaim is Wake and then Claim for l.Owner, in one atomic step: the
	// replica that took a run's result carries the run on in one round trip.
	WakeClaim(ctx context.Context, l Lease, ttl time.Duration) error
	// Release forgets the run when it ended, if l.Owner holds it.
	Release(ctx context.Context, l Lease) error
	// Due returns up to limit runs whose due time has passed, oldest first.
	// It takes nothing: callers Claim what they want.
	Due(ctx context.Context, limit int) ([]Lease, error)
}

// OutboxRecord is an outcome on its way to where it lasts (the audit log,
// the run history): it is kept in the store from the step that decided it
// until a drainer, on any replica, has written it there.
type OutboxRecord struct {
	// ID names the record: putting the same ID again keeps one record, so
	// a step redone after its replica stopped does not record twice.
	ID        string
	SessionID string
	// Body is the orchestrator's encoding of what to write; the store keeps
	// it as it is.
	Body []byte
	// Delivery is what the decision that put the record returned (filled in
	// by DecideRecord); nil when the call was decided without a result.
	Delivery *orchestratorv1.MailboxDelivery
}

// Outbox keeps outcome records durable off the path between a result and
// the next model turn: the decision and its record are one atomic step, the
// slow writes to the audit log and the run history come after it.
type Outbox interface {
	// DecideRecord is Decide that puts rec, with the result it returns, into
	// the outbox in the same atomic step. The record is put also when the
	// call's mailbox is gone (ok false).
	DecideRecord(ctx context.Context, sessionID, callID string, rec OutboxRecord) (d Delivery, ok bool, err error)
	// PutOutbox adds records whose outcome follows no decision.
	PutOutbox(ctx context.Context, recs ...OutboxRecord) error
	// Outboxed returns up to limit records, oldest first: the session's, or
	// with sessionID empty those of every session.
	Outboxed(ctx context.Context, sessionID string, limit int) ([]OutboxRecord, error)
	// DoneOutbox removes the session's records ids once they were written.
	DoneOutbox(ctx context.Context, sessionID string, ids ...string) error
}

// Store is everything the orchestrator keeps outside a run's goroutine.
type Store interface {
	Sessions
	Mailbox
	Outbox
	Signals
	Events
	Runs
	Leases
	Batcher
	// Close releases connections.
	Close() error
}

// ResultDigest identifies a delivery by its token and exact bytes, so a
// repeated delivery can be told from a conflicting one.
func ResultDigest(token string, r *orchestratorv1.MailboxDelivery) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode tool result: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(token))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ResultDelivery is a host result as the mailbox carries it.
func ResultDelivery(r *hostv1.HostResult) *orchestratorv1.MailboxDelivery {
	return &orchestratorv1.MailboxDelivery{Kind: &orchestratorv1.MailboxDelivery_Result{Result: r}}
}
