// Package runner carries a run on, on the replica that holds it: its
// lifecycle (resume, suspend, end), the loop of model turns, the tool loop
// that asks the run's pending call for results, compaction, and the event
// log it writes.
package runner

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// Deps is what the replica lends every run it works on.
type Deps struct {
	call.Deps
	Router modelv1.ModelRouterServiceClient
	// Local serves the followers on this replica of the runs its workers
	// write, from memory.
	Local *LocalLogs
	// Log is the replica's log; a worker's adds the run.
	Log    *slog.Logger
	Tracer trace.Tracer
	// Guidance is the host's prompt guidance, ResolveModel the model's
	// catalog entry.
	Guidance     func(ctx context.Context, host string) (*capabilityv1.GetGuidanceResponse, error)
	ResolveModel func(ctx context.Context, id string) (*modelv1.ModelInfo, error)
	// RecordRunEnd writes the run's end to the run history; ClearActiveRun
	// makes the session ready for its next run.
	RecordRunEnd   func(ctx context.Context, rs *orchestratorv1.RunState, log *slog.Logger)
	ClearActiveRun func(ctx context.Context, sessionID, runID string)
	// IsDraining says whether the replica is shutting down.
	IsDraining func() bool
	// Wake makes a suspended run due and claims it, with what it goes on
	// from (callID's mailbox among it, when set).
	Wake func(ctx context.Context, l state.Lease, callID string)
}
