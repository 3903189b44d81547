package orchestrator

// This file holds what a session created with new_document asks of its
// host, and the session's document as the host saved it, for download.

import (
	"context"
	"errors"
	"path"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// newDocumentKey marks every host request of a session created with
// new_document with the session's id: the host opens a new, empty document
// the first time it sees the key and never again, so the mark is safe on
// every call (a call it never received, one it answered from its ledger,
// a runtime restarted on its checkpoint).
func newDocumentKey(tc *agentv1.ToolCall, sessionID string) {
	if e := tc.GetExecute(); e != nil {
		e.NewDocumentKey = sessionID
	}
	if v := tc.GetExportView(); v != nil {
		v.NewDocumentKey = sessionID
	}
}

// maxDocumentName bounds a document's file name.
const maxDocumentName = 255

// GetSessionDocument returns the caller's session's document as its host
// last saved it.
func (s *Service) GetSessionDocument(ctx context.Context, req *agentv1.GetSessionDocumentRequest) (*agentv1.SessionDocument, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	doc, err := s.documents.Document(ctx, sess.GetSessionId())
	if errors.Is(err, state.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "session %s has no saved document yet: its host hands one over when it saves a commit to a file "+
			"(nexus dev, nexus host freecad --document); in FreeCAD's add-on the person saves the document in FreeCAD", sess.GetSessionId())
	}
	if err != nil {
		return nil, storeStatus(err, "read session document")
	}
	return doc, nil
}

// PutSessionDocument keeps what a linked host saved for a session bound to
// it.
func (l *hostLink) PutSessionDocument(ctx context.Context, req *agentv1.PutSessionDocumentRequest) (*agentv1.SessionDocument, error) {
	h, err := l.s.hostByToken(ctx, req.GetHostToken())
	if err != nil {
		return nil, err
	}
	name := req.GetFileName()
	if name == "" || len(name) > maxDocumentName || strings.ContainsAny(name, "/\\\x00") || path.Clean(name) != name || name == "." || name == ".." {
		return nil, status.Errorf(codes.InvalidArgument, "file_name must be a file's name of 1 to %d bytes without a folder, got %q", maxDocumentName, name)
	}
	sess, err := l.s.store.Get(ctx, req.GetSessionId())
	if errors.Is(err, state.ErrNotFound) || (err == nil && (sess.GetOwner() != h.GetOwner() || sess.GetHostId() != h.GetHostId())) {
		return nil, status.Errorf(codes.NotFound, "session %s is not bound to host %s", req.GetSessionId(), h.GetHostId())
	}
	if err != nil {
		return nil, storeStatus(err, "read session")
	}
	doc := &agentv1.SessionDocument{SessionId: sess.GetSessionId(), FileName: name, Data: req.GetData(),
		SaveTime: timestamppb.New(l.s.now()), HostId: h.GetHostId(), SizeBytes: int64(len(req.GetData()))}
	if err := l.s.documents.PutDocument(ctx, doc); err != nil {
		return nil, storeStatus(err, "store session document")
	}
	l.s.env.Log.InfoContext(ctx, "session document saved", "session", doc.GetSessionId(), "host", h.GetHostId(), "bytes", doc.GetSizeBytes())
	return &agentv1.SessionDocument{SessionId: doc.GetSessionId(), FileName: name, SaveTime: doc.GetSaveTime(), HostId: h.GetHostId(), SizeBytes: doc.GetSizeBytes()}, nil
}
