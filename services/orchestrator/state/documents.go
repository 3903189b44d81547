package state

import (
	"context"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Documents keeps each session's document as its host last saved it, for
// a person to download: every save the host hands over replaces the one
// before, and the document goes with its session (or with the session's
// hot-state retention).
type Documents interface {
	// PutDocument stores d for d.SessionId, replacing what was stored.
	PutDocument(ctx context.Context, d *agentv1.SessionDocument) error
	// Document returns the session's document, or ErrNotFound.
	Document(ctx context.Context, sessionID string) (*agentv1.SessionDocument, error)
	// DeleteDocument removes it; a missing one is not an error.
	DeleteDocument(ctx context.Context, sessionID string) error
}
