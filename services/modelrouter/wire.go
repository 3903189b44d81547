package modelrouter

// This file holds what every vendor adapter shares: the prepared turn
// and the adapter contract.

import (
	"context"
	"encoding/json"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// turn is one prepared request, vendor-neutral until an adapter renders it.
type turn struct {
	entry           *ModelEntry
	system          string
	messages        []*modelv1.Message
	tools           []toolDef
	maxTokens       int32
	sessionID       string
	allowCompaction bool
}

// toolDef is a tool with its schema parsed once.
type toolDef struct {
	name        string
	description string
	schema      json.RawMessage
}

// adapter speaks one vendor's wire format.
type adapter interface {
	// stream sends the turn, emits events as they arrive and returns the end
	// of the turn (usage without cost). Errors are *vendorError where known.
	stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error)
}
