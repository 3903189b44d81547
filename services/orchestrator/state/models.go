package state

import (
	"context"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// ModelState says which state of the document a review model shows.
type ModelState int

const (
	// ModelAfter is the state a call's script left (a commit's) or would
	// leave (a preview's).
	ModelAfter ModelState = iota + 1
	// ModelBefore is the document before a preview's script.
	ModelBefore
)

// Models keeps the 3D models a host exported with a call's result (binary
// glTF, for the person's review in 3D), beside the session they belong to
// and as long as its hot state: they are the person's, never the model's,
// so they stay out of the transcript and the event log.
type Models interface {
	// PutModel stores m for the session's call in the given state,
	// replacing what was stored.
	PutModel(ctx context.Context, sessionID, callID string, which ModelState, m *hostv1.ExportedModel) error
	// Model returns it, or ErrNotFound.
	Model(ctx context.Context, sessionID, callID string, which ModelState) (*hostv1.ExportedModel, error)
	// DeleteModels removes every model of the session; none is not an
	// error.
	DeleteModels(ctx context.Context, sessionID string) error
}
