// Package state declares what the orchestrator keeps outside a run's goroutine,
// so that replicas stay stateless: session state, the tool-result mailbox,
// cancel signals, each run's event log, and run leases.
//
// Two implementations satisfy these interfaces: state/memory (one process, the
// default for nexus dev) and state/redisstate (any number of replicas). Both
// pass the same conformance suite in state/statetest.
package state

import (
	"context"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// Error is a state error that can be a constant.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrNotFound means the session or run does not exist (or, to its caller,
	// belongs to someone else).
	ErrNotFound = Error("not found")
	// ErrNoPendingCall means a result named a tool call the session is not waiting on.
	ErrNoPendingCall = Error("no pending tool call with that id")
	// ErrBadToken means a result carried the wrong result token.
	ErrBadToken = Error("result token does not match the pending tool call")
	// ErrAlreadyDelivered means the pending call already has its result.
	ErrAlreadyDelivered = Error("a result for this tool call was already accepted")
	// ErrRunActive means the session already has an active run.
	ErrRunActive = Error("the session already has an active run")
	// ErrLeaseLost means another owner holds, or took over, a run's lease.
	ErrLeaseLost = Error("run lease lost")
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

// Delivery is a tool result taken from a mailbox.
type Delivery struct {
	ToolCallID string
	Result     *hostv1.HostResult
	// Trace carries the W3C trace context of the request that posted the
	// result, so one trace spans the whole run across replicas.
	Trace map[string]string
}

// Mailbox is the rendezvous between a suspended run and the request that
// carries its tool result, possibly on another replica, possibly minutes later.
type Mailbox interface {
	// Expect opens the session's mailbox for one tool call. Only a result that
	// names callID and carries token is accepted, and only once. ttl bounds how
	// long the mailbox is kept.
	Expect(ctx context.Context, sessionID, callID, token string, ttl time.Duration) error
	// Deliver stores the result and then wakes the waiter. It checks the
	// pending call, the token and that no result was stored yet in one atomic
	// step; when any check fails it returns ErrNoPendingCall, ErrBadToken or
	// ErrAlreadyDelivered and changes nothing.
	Deliver(ctx context.Context, sessionID, callID, token string, d Delivery) error
	// Wait blocks until the result for callID is delivered (also when it was
	// delivered before Wait was called) or ctx ends.
	Wait(ctx context.Context, sessionID, callID string) (Delivery, error)
	// CloseMailbox closes the mailbox; later deliveries get ErrNoPendingCall.
	CloseMailbox(ctx context.Context, sessionID string) error
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
	// Append adds a chunk; chunks are appended in seq order.
	Append(ctx context.Context, runID string, c *agentv1.StreamChunk) error
	// Finish marks the log complete; followers return after the last chunk.
	Finish(ctx context.Context, runID string) error
	// Follow calls fn for each chunk with seq > afterSeq, first those already
	// logged and then new ones as they are appended, until the log is finished
	// (returns nil), fn returns an error, or ctx ends. Unknown runs give ErrNotFound.
	Follow(ctx context.Context, runID string, afterSeq int64, fn func(*agentv1.StreamChunk) error) error
	// LastSeq returns the seq of the run's last chunk and whether its log is
	// finished; an unknown run gives 0, false, nil. The reaper uses it to end
	// a dead run's stream with the next seq.
	LastSeq(ctx context.Context, runID string) (seq int64, finished bool, err error)
}

// Lease says which replica owns a run.
type Lease struct {
	RunID     string
	SessionID string
	// Owner is the replica's id.
	Owner string
}

// Leases record which replica owns a run, so a run whose replica died is
// noticed and failed within one lease period by any other replica.
type Leases interface {
	// Acquire takes the run's lease; ErrLeaseLost when someone else holds it.
	Acquire(ctx context.Context, l Lease, ttl time.Duration) error
	// Renew extends the lease; ErrLeaseLost when l.Owner no longer holds it.
	Renew(ctx context.Context, l Lease, ttl time.Duration) error
	// Release gives the lease up when the run ends normally.
	Release(ctx context.Context, l Lease) error
	// Expired returns leases that ran out without being released (their owner
	// died) and removes them, so exactly one caller gets each.
	Expired(ctx context.Context, now time.Time) ([]Lease, error)
}

// Store is everything the orchestrator keeps outside a run's goroutine.
type Store interface {
	Sessions
	Mailbox
	Signals
	Events
	Leases
	// Close releases connections.
	Close() error
}
