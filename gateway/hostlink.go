package gateway

// This file serves the host link to desktop host runtimes: GET
// /v1/host-link as server-sent events, and their results on the usual
// tool-results route, both with a host token that opens nothing else.
//
// Why server-sent events and POST rather than a WebSocket or gRPC: a host
// runtime speaks them with Python's standard library alone (http.client
// reads the stream line by line, urllib posts), and they are plain HTTP/1.1
// requests and responses, so every proxy and ingress that already passes
// the run streams passes the link too, with the same keepalive frames and
// no upgrade to allow.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/logging"
	"nexus.local/platform/sse"
)

// hostTokenPrefix starts every host token (the orchestrator mints them).
const hostTokenPrefix = "nxh_"

type hostTokenKey struct{}

// hostTokenFrom is the host token the request was authenticated with, if
// it was a host's.
func hostTokenFrom(ctx context.Context) string {
	t, _ := ctx.Value(hostTokenKey{}).(string)
	return t
}

// tokenKey names a host token in limits and logs without revealing it.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "host:" + hex.EncodeToString(sum[:8])
}

// hostResults sends a host's tool result to SubmitHostResult, which checks
// that the session is bound to the host; everyone else's goes to next.
func (g *Gateway) hostResults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := hostTokenFrom(r.Context())
		rt := routeFrom(r.Context())
		if token == "" || rt == nil || rt.Operation != route.SubmitToolResult {
			next.ServeHTTP(w, r)
			return
		}
		req, _ := decodedFrom(r).(*agentv1.SubmitToolResultRequest)
		if req.GetCourierFailure() != nil {
			writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "a linked host posts what it ran, never a courier failure", nil)
			return
		}
		session := rt.Param(r.URL.Path, "session_id")
		resp, err := g.links.SubmitHostResult(r.Context(), &agentv1.SubmitHostResultRequest{
			HostToken: token, SessionId: session, ToolCallId: req.GetToolCallId(), ResultToken: req.GetResultToken(), Result: req.GetResult(),
		})
		if err != nil {
			writeStatusError(r.Context(), w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"accepted": resp.GetAccepted()})
	})
}

// handleHostLink streams a host's calls as server-sent events: `linked`
// once, then `call` events whose id is the call's seq in the host's log.
func (g *Gateway) handleHostLink(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	token := hostTokenFrom(r.Context())
	after, err := lastEventID(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST, err.Error(), nil)
		return
	}
	q := r.URL.Query()
	req := &agentv1.LinkHostRequest{HostToken: token, AfterSeq: after, HostApp: q.Get("hostApp"), Document: q.Get("document"),
		RuntimeVersion: q.Get("runtimeVersion"), HostVersion: q.Get("hostVersion")}
	for name, v := range map[string]string{"hostApp": req.HostApp, "document": req.Document, "runtimeVersion": req.RuntimeVersion, "hostVersion": req.HostVersion} {
		if len(v) > 512 {
			writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, name+" is longer than 512 bytes",
				&limitInfo{Name: "link_field_bytes", Setting: name, Max: 512, Actual: int64(len(v))})
			return
		}
	}
	release, ok := g.takeStream(w, tokenKey(token))
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream, err := g.links.LinkHost(ctx, req)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	log := logging.FromContext(r.Context()).With("host", tokenKey(token))
	recvs := pump(ctx, stream.Recv, 16)
	out := sse.NewStream(w)
	write := func(frame []byte) bool { return out.Write(frame) == nil }
	keepalive := time.NewTicker(g.cfg.SSEKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if !write(sse.AppendComment(nil, "keepalive")) {
				return
			}
		case res, ok := <-recvs:
			if !ok {
				return
			}
			if res.err != nil {
				if errors.Is(res.err, io.EOF) || ctx.Err() != nil {
					return
				}
				if !out.Started() {
					writeStatusError(r.Context(), w, res.err)
					return
				}
				write(errorFrameCoded(r.Context(), res.err, linkErrorCode(res.err)))
				log.Info("host link ended", "err", res.err)
				return
			}
			if !write(linkFrame(res.msg)) {
				return
			}
		}
	}
}

// linkErrorCode is the code of the error event that ends a host link: the
// orchestrator's own when it gives one, a credential no longer good (the
// host was revoked) says so, so the runtime asks its person to pair again
// instead of reporting a fault.
func linkErrorCode(err error) agentv1.ErrorCode {
	// The orchestrator says why a link ended when it has a code for it (a
	// newer link of the host superseded this one).
	for _, d := range status.Convert(err).Details() {
		if e, ok := d.(*agentv1.Error); ok && e.GetCode() != agentv1.ErrorCode_ERROR_CODE_UNSPECIFIED {
			return e.GetCode()
		}
	}
	switch status.Code(err) {
	case codes.PermissionDenied, codes.Unauthenticated:
		return agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED
	}
	return streamErrorCode(status.Code(err))
}

// linkFrame renders one event of a host link.
func linkFrame(ev *agentv1.HostLinkEvent) []byte {
	var (
		name string
		seq  int64
		data []byte
		err  error
	)
	switch e := ev.GetEvent().(type) {
	case *agentv1.HostLinkEvent_Linked:
		name = "linked"
		data, err = protojson.Marshal(e.Linked)
	case *agentv1.HostLinkEvent_Call:
		name, seq = "call", e.Call.GetSeq()
		data, err = protojson.Marshal(e.Call)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	frame, err := sse.AppendType(nil, name)
	if err != nil {
		return nil
	}
	if seq > 0 {
		frame = sse.AppendSeqID(frame, seq)
	}
	return sse.AppendData(frame, data)
}
