package memory

import (
	"context"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// SaveRun stores a copy of the run's state.
func (s *Store) SaveRun(_ context.Context, r *orchestratorv1.RunState) error {
	if r.GetRunId() == "" {
		return state.Error("save run: empty run id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[r.GetRunId()] = proto.Clone(r).(*orchestratorv1.RunState)
	return nil
}

// GetRun returns a copy of the run's state.
func (s *Store) GetRun(_ context.Context, runID string) (*orchestratorv1.RunState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok {
		return nil, state.ErrNotFound
	}
	return proto.Clone(r).(*orchestratorv1.RunState), nil
}
