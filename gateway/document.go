package gateway

// This file serves a session's document as bytes: GET
// /v1/sessions/{session_id}/document answers the file its host last saved
// (the web UI's download), and PUT on the same path is how a linked host
// hands a saved file over, with its host token. The bytes are the body on
// both sides, not base64 inside JSON: a document is megabytes, and the
// browser saves the answer as it is.

import (
	"io"
	"mime"
	"net/http"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// documentContentType is what a document is answered as: the bytes of a
// file in the host application's own format.
const documentContentType = "application/octet-stream"

// handleGetDocument answers the session's document as its host saved it
// (a host token never gets here: the route table admits it for the PUT only).
func (g *Gateway) handleGetDocument(w http.ResponseWriter, r *http.Request, params map[string]string) {
	doc, err := g.client.GetSessionDocument(r.Context(), &agentv1.GetSessionDocumentRequest{SessionId: params["session_id"]})
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", documentContentType)
	h.Set("Content-Length", strconv.Itoa(len(doc.GetData())))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": doc.GetFileName()}))
	h.Set("Cache-Control", "no-store")
	if t := doc.GetSaveTime(); t != nil {
		h.Set("Last-Modified", t.AsTime().UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.GetData())
}

// handlePutDocument keeps a linked host's saved document for the session;
// the file's name comes as the fileName query parameter.
func (g *Gateway) handlePutDocument(w http.ResponseWriter, r *http.Request, params map[string]string) {
	token := hostTokenFrom(r.Context())
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_BODY, "read request body: "+err.Error(), nil)
		return
	}
	doc, err := g.links.PutSessionDocument(r.Context(), &agentv1.PutSessionDocumentRequest{
		HostToken: token, SessionId: params["session_id"], FileName: r.URL.Query().Get("fileName"), Data: data,
	})
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	b, err := protojson.Marshal(doc)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "encode answer: "+err.Error(), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// modelContentType is what a review model is answered as (glTF 2.0's
// registered media type for its binary form).
const modelContentType = "model/gltf-binary"

// handleGetCallModel answers the 3D model a call's result carried, as the
// .glb's bytes; ?state=before answers a preview's document before its
// script.
func (g *Gateway) handleGetCallModel(w http.ResponseWriter, r *http.Request, params map[string]string) {
	req := &agentv1.GetCallModelRequest{SessionId: params["session_id"], ToolCallId: params["tool_call_id"]}
	state, err := route.ModelState(r.URL.Query().Get("state"))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST, err.Error(), nil)
		return
	}
	req.State = state
	m, err := g.client.GetCallModel(r.Context(), req)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", modelContentType)
	h.Set("Content-Length", strconv.Itoa(len(m.GetData())))
	name := params["tool_call_id"] + ".glb"
	if req.State == agentv1.ModelState_MODEL_STATE_BEFORE {
		name = params["tool_call_id"] + "-before.glb"
	}
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	h.Set("Cache-Control", "private, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(m.GetData())
}
