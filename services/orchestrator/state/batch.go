package state

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
)

// Batcher runs several steps of the store at once, so that a run waits for
// one round trip to the store where it would wait for several: the claim
// of a woken run with what the run goes on from, a decision with what
// follows from it, a turn's start with the writes before it.
type Batcher interface {
	// Batch runs steps in order, each as the store's method of the same name
	// would, and fills in each step's answer and error. A step that fails
	// does not stop the next ones, which do not depend on it; a caller that
	// retries a batch after ErrUnavailable runs every step again. Batch
	// returns the first step's error.
	Batch(ctx context.Context, steps ...Step) error
}

// Step is one operation of a Batch and, once the batch ran, its answer.
// The set is closed: the steps are this file's.
type Step interface {
	// Failed is the step's error, once the batch ran.
	Failed() error
	// run does the step through the store's own methods.
	run(ctx context.Context, s Store) error
}

// StepErr is a step's error.
type StepErr struct{ Err error }

// Failed is the step's error.
func (e *StepErr) Failed() error { return e.Err }

// RunSteps runs steps one after the other through the store's own
// methods: Batch for a store that has no cheaper way.
func RunSteps(ctx context.Context, s Store, steps ...Step) error {
	var first error
	for _, st := range steps {
		if err := st.run(ctx, s); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WakeClaimStep is Leases.WakeClaim.
type WakeClaimStep struct {
	Lease Lease
	TTL   time.Duration
	StepErr
}

func (x *WakeClaimStep) run(ctx context.Context, s Store) error {
	x.Err = s.WakeClaim(ctx, x.Lease, x.TTL)
	return x.Err
}

// GetRunStep is Runs.GetRun.
type GetRunStep struct {
	RunID string
	Run   *orchestratorv1.RunState
	StepErr
}

func (x *GetRunStep) run(ctx context.Context, s Store) error {
	x.Run, x.Err = s.GetRun(ctx, x.RunID)
	return x.Err
}

// CancelledStep is Signals.Cancelled: Done and Stop are set when Err is nil.
type CancelledStep struct {
	RunID string
	Done  <-chan struct{}
	Stop  func()
	StepErr
}

func (x *CancelledStep) run(ctx context.Context, s Store) error {
	x.Done, x.Stop, x.Err = s.Cancelled(ctx, x.RunID)
	return x.Err
}

// TranscriptStep is Sessions.Transcript.
type TranscriptStep struct {
	SessionID string
	Msgs      []*modelv1.Message
	StepErr
}

func (x *TranscriptStep) run(ctx context.Context, s Store) error {
	x.Msgs, x.Err = s.Transcript(ctx, x.SessionID)
	return x.Err
}

// LastSeqStep is Events.LastSeq.
type LastSeqStep struct {
	RunID    string
	Seq      int64
	Finished bool
	StepErr
}

func (x *LastSeqStep) run(ctx context.Context, s Store) error {
	x.Seq, x.Finished, x.Err = s.LastSeq(ctx, x.RunID)
	return x.Err
}

// PeekStep is Mailbox.Peek.
type PeekStep struct {
	SessionID, CallID string
	Delivery          Delivery
	OK                bool
	StepErr
}

func (x *PeekStep) run(ctx context.Context, s Store) error {
	x.Delivery, x.OK, x.Err = s.Peek(ctx, x.SessionID, x.CallID)
	return x.Err
}

// GetSessionStep is Sessions.Get.
type GetSessionStep struct {
	SessionID string
	Session   *agentv1.Session
	StepErr
}

func (x *GetSessionStep) run(ctx context.Context, s Store) error {
	x.Session, x.Err = s.Get(ctx, x.SessionID)
	return x.Err
}

// DecideRecordStep is Outbox.DecideRecord.
type DecideRecordStep struct {
	SessionID, CallID string
	Record            OutboxRecord
	Delivery          Delivery
	OK                bool
	StepErr
}

func (x *DecideRecordStep) run(ctx context.Context, s Store) error {
	x.Delivery, x.OK, x.Err = s.DecideRecord(ctx, x.SessionID, x.CallID, x.Record)
	return x.Err
}

// SwapSessionStep replaces the stored session with Now if it is still Was,
// as read: an Update whose read was made before, in another batch. Swapped
// says whether it did; a session that changed since is left as it is, and
// the caller updates it the ordinary way. A missing session is ErrNotFound.
type SwapSessionStep struct {
	Was, Now *agentv1.Session
	Swapped  bool
	StepErr
}

// errChanged stops an Update whose session is no longer the one read.
const errChanged = Error("the session changed since it was read")

func (x *SwapSessionStep) run(ctx context.Context, s Store) error {
	_, err := s.Update(ctx, x.Now.GetSessionId(), func(cur *agentv1.Session) error {
		if !proto.Equal(cur, x.Was) {
			return errChanged
		}
		proto.Reset(cur)
		proto.Merge(cur, x.Now)
		return nil
	})
	x.Swapped, x.Err = err == nil, err
	if errors.Is(err, errChanged) {
		x.Err = nil
	}
	return x.Err
}

// AppendStep is Events.Append.
type AppendStep struct {
	RunID  string
	Chunks []*agentv1.StreamChunk
	StepErr
}

func (x *AppendStep) run(ctx context.Context, s Store) error {
	x.Err = s.Append(ctx, x.RunID, x.Chunks...)
	return x.Err
}

// SaveTranscriptStep is Sessions.SaveTranscript.
type SaveTranscriptStep struct {
	SessionID string
	Msgs      []*modelv1.Message
	StepErr
}

func (x *SaveTranscriptStep) run(ctx context.Context, s Store) error {
	x.Err = s.SaveTranscript(ctx, x.SessionID, x.Msgs)
	return x.Err
}

// SaveRunStep is Runs.SaveRun.
type SaveRunStep struct {
	Run *orchestratorv1.RunState
	StepErr
}

func (x *SaveRunStep) run(ctx context.Context, s Store) error {
	x.Err = s.SaveRun(ctx, x.Run)
	return x.Err
}
