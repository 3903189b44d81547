package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// maxHostResponse bounds what the CLI reads from a host runtime; results carry
// base64 images, so this is generous.
const maxHostResponse = 64 << 20

// Host talks to a paired host runtime over its local HTTP contract, the same
// JSON the browser sends.
type Host struct {
	URL   string
	Token string
	HTTP  *http.Client
}

// Info asks the host which application it is.
func (h *Host) Info(ctx context.Context) (*hostv1.InfoResponse, error) {
	var info hostv1.InfoResponse
	if err := h.call(ctx, http.MethodGet, "/v1/info", nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Carry runs call on the host and returns what the host answered. A host that
// cannot be reached or fails is reported as a HostResult error, so the model
// sees what happened instead of the run hanging.
func (h *Host) Carry(ctx context.Context, call *agentv1.ToolCall) *hostv1.HostResult {
	var (
		res hostv1.HostResult
		err error
	)
	switch req := call.GetHostRequest().(type) {
	case *agentv1.ToolCall_Execute:
		err = h.call(ctx, http.MethodPost, "/v1/execute", req.Execute, &res)
	case *agentv1.ToolCall_ExportView:
		err = h.call(ctx, http.MethodPost, "/v1/export-view", req.ExportView, &res)
	default:
		err = fmt.Errorf("tool call %s carries no host request", call.GetToolCallId())
	}
	if err != nil {
		return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "HostRuntimeError", Message: err.Error()}}
	}
	return &res
}

func (h *Host) call(ctx context.Context, method, path string, body proto.Message, out proto.Message) error {
	if h.URL == "" {
		return fmt.Errorf("no host runtime: pass --host-url and --host-token")
	}
	var rd io.Reader
	if body != nil {
		b, err := protojson.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s request: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	url := strings.TrimRight(h.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("host request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	client := h.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("host runtime at %s: %w", h.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxHostResponse))
	if err != nil {
		return fmt.Errorf("read %s answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("host runtime at %s refused the pairing token (401): check --host-token", h.URL)
		}
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, msg)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", url, err)
	}
	return nil
}
