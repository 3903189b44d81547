// Package statetest is the conformance suite every state.Store passes: the
// in-process store and the Redis store make the same promises, and this is
// where the promises are written down.
package statetest

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// patience bounds every wait in the suite. It is a guard against a hang on a
// loaded machine, never a measurement.
const patience = 60 * time.Second

// Run runs the suite; newStore returns an empty store that the suite may
// fill (it is closed by the suite).
func Run(t *testing.T, newStore func(t *testing.T) state.Store) {
	open := func(t *testing.T) state.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Run("sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("update is atomic", func(t *testing.T) { t.Parallel(); testUpdateAtomic(t, open(t)) })
	t.Run("transcript", func(t *testing.T) { t.Parallel(); testTranscript(t, open(t)) })
	t.Run("mailbox", func(t *testing.T) { t.Parallel(); testMailbox(t, open) })
	t.Run("outbox", func(t *testing.T) { t.Parallel(); testOutbox(t, open) })
	t.Run("deliver exactly once", func(t *testing.T) { t.Parallel(); testExactlyOnce(t, open(t)) })
	t.Run("signals", func(t *testing.T) { t.Parallel(); testSignals(t, open(t)) })
	t.Run("events", func(t *testing.T) { t.Parallel(); testEvents(t, open(t)) })
	t.Run("concurrent appends", func(t *testing.T) { t.Parallel(); testConcurrentAppends(t, open(t)) })
	t.Run("several chunks in one append", func(t *testing.T) { t.Parallel(); testAppendSeveral(t, open(t)) })
	t.Run("a follower gets what was read together", func(t *testing.T) { t.Parallel(); testFollowHandsOverWhatWasRead(t, open(t)) })
	t.Run("leases", func(t *testing.T) { t.Parallel(); testLeases(t, open(t)) })
	t.Run("a due run goes to one claimer", func(t *testing.T) { t.Parallel(); testClaimOnce(t, open(t)) })
	t.Run("runs", func(t *testing.T) { t.Parallel(); testRuns(t, open(t)) })
	t.Run("batch", func(t *testing.T) { t.Parallel(); testBatch(t, open) })
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

func newSession(id, owner string, created time.Time) *agentv1.Session {
	return &agentv1.Session{
		SessionId:  id,
		HostApp:    "freecad",
		Model:      "anthropic/claude-sonnet-4-5",
		Owner:      owner,
		CreateTime: timestamppb.New(created),
	}
}
