package hostlink

import (
	"context"
	"errors"
	"path"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/state"
)

// maxDocumentName bounds a document's file name.
const maxDocumentName = 255

// PutSessionDocument keeps what a linked host saved for a session bound to
// it.
func (s *Server) PutSessionDocument(ctx context.Context, req *agentv1.PutSessionDocumentRequest) (*agentv1.SessionDocument, error) {
	h, err := s.hostByToken(ctx, req.GetHostToken())
	if err != nil {
		return nil, err
	}
	name := req.GetFileName()
	if name == "" || len(name) > maxDocumentName || strings.ContainsAny(name, "/\\\x00") || path.Clean(name) != name || name == "." || name == ".." {
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "file_name must be a file's name of 1 to %d bytes without a folder, got %q", maxDocumentName, name)
	}
	sess, err := s.Store.Get(ctx, req.GetSessionId())
	if errors.Is(err, state.ErrNotFound) || (err == nil && (sess.GetOwner() != h.GetOwner() || sess.GetHostId() != h.GetHostId())) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_LINKED, "session %s is not bound to host %s", req.GetSessionId(), h.GetHostId())
	}
	if err != nil {
		return nil, state.Status(err, "read session")
	}
	doc := &agentv1.SessionDocument{SessionId: sess.GetSessionId(), FileName: name, Data: req.GetData(),
		SaveTime: timestamppb.New(s.Now()), HostId: h.GetHostId(), SizeBytes: int64(len(req.GetData()))}
	if err := s.Documents.PutDocument(ctx, doc); err != nil {
		return nil, state.Status(err, "store session document")
	}
	s.Log.InfoContext(ctx, "session document saved", "session", doc.GetSessionId(), "host", h.GetHostId(), "bytes", doc.GetSizeBytes())
	return &agentv1.SessionDocument{SessionId: doc.GetSessionId(), FileName: name, SaveTime: doc.GetSaveTime(), HostId: h.GetHostId(), SizeBytes: doc.GetSizeBytes()}, nil
}
