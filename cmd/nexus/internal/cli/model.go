package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// maxModelBytes bounds a review model read from the gateway: the host
// runtime's cap on one export.
const maxModelBytes = 64 << 20

// modelBackend is what nexus model needs of a backend.
type modelBackend interface {
	GetCallModel(ctx context.Context, req *agentv1.GetCallModelRequest) (*hostv1.ExportedModel, error)
}

func (b *grpcBackend) GetCallModel(ctx context.Context, req *agentv1.GetCallModelRequest) (*hostv1.ExportedModel, error) {
	m, err := b.c.GetCallModel(ctx, req)
	return m, b.wrap("get the 3D model of call "+req.GetToolCallId(), err)
}

// GetCallModel reads the gateway's answer, which is the .glb's bytes, not
// the message as JSON.
func (b *gatewayBackend) GetCallModel(ctx context.Context, req *agentv1.GetCallModelRequest) (*hostv1.ExportedModel, error) {
	what := "get the 3D model of call " + req.GetToolCallId()
	path := "/v1/sessions/" + url.PathEscape(req.GetSessionId()) + "/calls/" + url.PathEscape(req.GetToolCallId()) + "/model"
	if req.GetState() == agentv1.ModelState_MODEL_STATE_BEFORE {
		path += "?state=before"
	}
	resp, err := b.request(ctx, what, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxModelBytes+1))
	if err != nil {
		return nil, &apiError{what: what, where: b.Where(), status: "UNAVAILABLE", message: err.Error()}
	}
	if len(data) > maxModelBytes {
		return nil, &apiError{what: what, where: b.Where(), status: "RESOURCE_EXHAUSTED", message: fmt.Sprintf("the model is over %d bytes", maxModelBytes)}
	}
	return &hostv1.ExportedModel{MimeType: resp.Header.Get("Content-Type"), Data: data, SizeBytes: int64(len(data))}, nil
}

// ModelOptions configures Model.
type ModelOptions struct {
	Conn      Conn
	SessionID string
	CallID    string
	// Before asks for a preview's document before its script.
	Before bool
	// File is where the .glb goes; "-" is standard output, empty is
	// CALL.glb (CALL-before.glb) in the working folder.
	File string
}

// Model is `nexus model SESSION CALL`: the 3D model (binary glTF) the host
// exported with a call's result, written to a file any glTF viewer opens.
func Model(ctx context.Context, opt ModelOptions, o IO) error {
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	req := &agentv1.GetCallModelRequest{SessionId: opt.SessionID, ToolCallId: opt.CallID}
	name := opt.CallID + ".glb"
	if opt.Before {
		req.State, name = agentv1.ModelState_MODEL_STATE_BEFORE, opt.CallID+"-before.glb"
	}
	m, err := b.(modelBackend).GetCallModel(ctx, req)
	if err != nil {
		return err
	}
	switch opt.File {
	case "-":
		_, err := o.Stdout.Write(m.GetData())
		return err
	case "":
		opt.File = name
	}
	if err := os.WriteFile(opt.File, m.GetData(), 0o644); err != nil {
		return fmt.Errorf("write the model: %w", err)
	}
	fmt.Fprintf(o.Stderr, "wrote %s (%d bytes, binary glTF: open it in any glTF viewer)\n", opt.File, len(m.GetData()))
	return nil
}
