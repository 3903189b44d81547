package mcpserver

// This file offers the 3D model of a call's result (binary glTF) as an MCP
// resource, and links a run's result to the model of its last commit.

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// modelMIMEType is binary glTF's registered media type.
const modelMIMEType = "model/gltf-binary"

// modelTemplate is the URI template of a call's model; ?state=before is a
// preview's document before its script.
const modelTemplate = "nexus://sessions/{sessionId}/calls/{callId}/model"

// modelURI is the resource URI of a call's model.
func modelURI(sessionID, callID string) string {
	return "nexus://sessions/" + url.PathEscape(sessionID) + "/calls/" + url.PathEscape(callID) + "/model"
}

// modelResource describes the template to clients.
func modelResource() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		Name:        "call_model",
		Title:       "3D model of a script's result",
		URITemplate: modelTemplate,
		MIMEType:    modelMIMEType,
		Description: "The document as binary glTF 2.0 after a committed or previewed script (one node per element, named by its id), " +
			"for a person to orbit in a glTF viewer; add ?state=before for a preview's document before its script. A run's result links it.",
	}
}

// readModel answers a model resource of the caller's session.
func (c *caller) readModel(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	parts := []string{}
	if err == nil {
		parts = strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	}
	if err != nil || u.Scheme != "nexus" || u.Host != "sessions" || len(parts) != 4 || parts[1] != "calls" || parts[3] != "model" {
		return nil, fmt.Errorf("%q is not a model resource: want %s", uri, modelTemplate)
	}
	session, _ := url.PathUnescape(parts[0])
	call, _ := url.PathUnescape(parts[2])
	in := &agentv1.GetCallModelRequest{SessionId: session, ToolCallId: call}
	state, err := route.ModelState(u.Query().Get("state"))
	if err != nil {
		return nil, err
	}
	in.State = state
	m, err := c.cfg.Orchestrator.GetCallModel(c.outgoing(ctx), in)
	if status.Code(err) == codes.NotFound {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("read the model: %s", status.Convert(err).Message())
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: modelMIMEType, Blob: m.GetData()}}}, nil
}

// modelLink links the model of the run's last commit, when its host
// exported one.
func (r *runFollower) modelLink(out RunOutput) *mcp.ResourceLink {
	for i := len(r.order) - 1; i >= 0; i-- {
		rec := r.carried[r.order[i]]
		if !rec.result.GetCommitted() {
			continue
		}
		m := rec.result.GetModel()
		if m == nil {
			return nil
		}
		return linkTo(out.SessionID, r.order[i], m)
	}
	return nil
}

func linkTo(sessionID, callID string, m *hostv1.ExportedModel) *mcp.ResourceLink {
	size := m.GetSizeBytes()
	return &mcp.ResourceLink{URI: modelURI(sessionID, callID), Name: callID + ".glb", Title: "3D model of the committed change",
		MIMEType: modelMIMEType, Size: &size, Description: fmt.Sprintf("binary glTF of the document after this commit, %d elements", len(m.GetElementIds()))}
}
