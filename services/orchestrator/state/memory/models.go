package memory

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// Models is the in-process state.Models, beside Documents.
type Models struct {
	mu     sync.Mutex
	models map[string]*hostv1.ExportedModel
}

// NewModels returns an empty in-process model store.
func NewModels() *Models { return &Models{models: map[string]*hostv1.ExportedModel{}} }

var _ state.Models = (*Models)(nil)

func modelKey(sessionID, callID string, which state.ModelState) string {
	return sessionID + "\x00" + callID + "\x00" + string(rune('0'+int(which)))
}

// PutModel implements state.Models.
func (m *Models) PutModel(_ context.Context, sessionID, callID string, which state.ModelState, model *hostv1.ExportedModel) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.models[modelKey(sessionID, callID, which)] = proto.Clone(model).(*hostv1.ExportedModel)
	return nil
}

// Model implements state.Models.
func (m *Models) Model(_ context.Context, sessionID, callID string, which state.ModelState) (*hostv1.ExportedModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	got, ok := m.models[modelKey(sessionID, callID, which)]
	if !ok {
		return nil, state.ErrNotFound
	}
	return proto.Clone(got).(*hostv1.ExportedModel), nil
}

// DeleteModels implements state.Models.
func (m *Models) DeleteModels(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.models {
		if strings.HasPrefix(k, sessionID+"\x00") {
			delete(m.models, k)
		}
	}
	return nil
}
