package memory

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Documents is the in-process state.Documents, beside Hosts.
type Documents struct {
	mu   sync.Mutex
	docs map[string]*agentv1.SessionDocument
}

// NewDocuments returns an empty in-process document store.
func NewDocuments() *Documents {
	return &Documents{docs: map[string]*agentv1.SessionDocument{}}
}

var _ state.Documents = (*Documents)(nil)

// PutDocument implements state.Documents.
func (d *Documents) PutDocument(_ context.Context, doc *agentv1.SessionDocument) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[doc.GetSessionId()] = proto.Clone(doc).(*agentv1.SessionDocument)
	return nil
}

// Document implements state.Documents.
func (d *Documents) Document(_ context.Context, sessionID string) (*agentv1.SessionDocument, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.docs[sessionID]
	if !ok {
		return nil, state.ErrNotFound
	}
	return proto.Clone(doc).(*agentv1.SessionDocument), nil
}

// DeleteDocument implements state.Documents.
func (d *Documents) DeleteDocument(_ context.Context, sessionID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.docs, sessionID)
	return nil
}
