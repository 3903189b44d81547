package orchestrator

// This file holds what a session created with new_document asks of its
// host, and the session's document as the host saved it, for download.

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/state"
)

// GetSessionDocument returns the caller's session's document as its host
// last saved it.
func (s *Service) GetSessionDocument(ctx context.Context, req *agentv1.GetSessionDocumentRequest) (*agentv1.SessionDocument, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	doc, err := s.documents.Document(ctx, sess.GetSessionId())
	if errors.Is(err, state.ErrNotFound) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_NO_DOCUMENT, "session %s has no saved document yet: its host hands one over when it saves a commit to a file "+
			"(nexus dev, nexus host freecad --document); in FreeCAD's add-on the person saves the document in FreeCAD", sess.GetSessionId())
	}
	if err != nil {
		return nil, state.Status(err, "read session document")
	}
	return doc, nil
}
