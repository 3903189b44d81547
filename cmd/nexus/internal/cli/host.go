package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/enumname"
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

// Carry runs call on the host and returns what the host answered, or, when
// the call never reached a host that accepts it, the courier failure to post
// instead of a result: the model must not be told a script ran or rolled back
// when no host saw it. hostApp is what the runtime said it serves.
func (h *Host) Carry(ctx context.Context, hostApp string, call *agentv1.ToolCall) (*hostv1.HostResult, *agentv1.CourierFailure) {
	if h.URL == "" {
		return nil, &agentv1.CourierFailure{Code: agentv1.ErrorCode_ERROR_CODE_HOST_NOT_PAIRED,
			Message: "nexus run has no host runtime paired (set NEXUS_HOST_URL and NEXUS_HOST_TOKEN)"}
	}
	if want := call.GetHostApp(); want != "" && hostApp != "" && want != hostApp {
		return nil, &agentv1.CourierFailure{Code: agentv1.ErrorCode_ERROR_CODE_HOST_MISMATCH,
			Message: fmt.Sprintf("the session is for %s but the host runtime at %s serves %s", want, h.URL, hostApp)}
	}
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
	var he *hostError
	switch {
	case err == nil:
		return &res, nil
	case errors.As(err, &he) && he.unauthorized:
		return nil, &agentv1.CourierFailure{Code: agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED, Message: err.Error()}
	case errors.As(err, &he) && he.unreachable:
		return nil, &agentv1.CourierFailure{Code: agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE, Message: err.Error()}
	default:
		// The runtime answered, but with a failure of its own: that is a
		// result the model can act on.
		return &hostv1.HostResult{Error: &hostv1.ExecError{Type: enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_HOST_RUNTIME_ERROR), Condition: hostv1.ExecCondition_EXEC_CONDITION_HOST_RUNTIME_ERROR, Message: err.Error()}}, nil
	}
}

// hostError is a host call that never reached a runtime accepting it.
type hostError struct {
	err         error
	unreachable bool
	// unauthorized: the runtime refused the pairing token.
	unauthorized bool
}

func (e *hostError) Error() string { return e.err.Error() }
func (e *hostError) Unwrap() error { return e.err }

func (h *Host) call(ctx context.Context, method, path string, body proto.Message, out proto.Message) error {
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
		if ctx.Err() != nil {
			return fmt.Errorf("host runtime at %s: %w", h.URL, ctx.Err())
		}
		return &hostError{err: fmt.Errorf("host runtime at %s cannot be reached: %w", h.URL, err), unreachable: true}
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
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return &hostError{err: fmt.Errorf("host runtime at %s refused the pairing token (%s): check --host-token or NEXUS_HOST_TOKEN", h.URL, resp.Status), unauthorized: true}
		}
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, msg)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", url, err)
	}
	return nil
}
