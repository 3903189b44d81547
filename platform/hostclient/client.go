// Package hostclient speaks the host runtime contract (proto/nexus/host/v1)
// to a host runtime over loopback HTTP: protojson with the pairing token. It
// knows no host application, so anything may use it.
package hostclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// MaxAnswerBytes bounds a runtime answer; images make them large.
const MaxAnswerBytes = 64 << 20

// Client speaks the host runtime contract: protojson over loopback HTTP with
// the pairing token.
type Client struct {
	URL    string
	Token  string
	Origin string
	HTTP   *http.Client
}

// StatusError is a runtime answer other than 200. A 409 (a tool call id
// reused for other code) also fills the HostResult the caller passed.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("host runtime answered %d: %s", e.Code, e.Message)
}

// Info calls GET /v1/info.
func (c *Client) Info(ctx context.Context) (*hostv1.InfoResponse, error) {
	out := &hostv1.InfoResponse{}
	return out, c.call(ctx, http.MethodGet, "/v1/info", nil, out)
}

// Execute calls POST /v1/execute.
func (c *Client) Execute(ctx context.Context, req *hostv1.ExecuteRequest) (*hostv1.HostResult, error) {
	out := &hostv1.HostResult{}
	return out, c.call(ctx, http.MethodPost, "/v1/execute", req, out)
}

// ExportView calls POST /v1/export-view.
func (c *Client) ExportView(ctx context.Context, req *hostv1.ExportViewRequest) (*hostv1.HostResult, error) {
	out := &hostv1.HostResult{}
	return out, c.call(ctx, http.MethodPost, "/v1/export-view", req, out)
}

// ExportModel calls POST /v1/export-model.
func (c *Client) ExportModel(ctx context.Context, req *hostv1.ExportModelRequest) (*hostv1.ExportedModel, error) {
	out := &hostv1.ExportedModel{}
	return out, c.call(ctx, http.MethodPost, "/v1/export-model", req, out)
}

func (c *Client) call(ctx context.Context, method, path string, in, out proto.Message) error {
	var body io.Reader
	if in != nil {
		b, err := protojson.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return fmt.Errorf("build %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	if c.Origin != "" {
		req.Header.Set("Origin", c.Origin)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("call %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("read %s answer: %w", path, err)
	}
	if len(raw) > MaxAnswerBytes {
		return fmt.Errorf("%s answer exceeds %d bytes", path, MaxAnswerBytes)
	}
	if resp.StatusCode == http.StatusConflict {
		// A refused call (CallIdReused) is answered as a HostResult whose
		// error says why; the caller gets both.
		if hr, ok := out.(*hostv1.HostResult); ok && protojson.Unmarshal(raw, hr) == nil && hr.GetError() != nil {
			return &StatusError{Code: resp.StatusCode, Message: hr.GetError().GetType() + ": " + hr.GetError().GetMessage()}
		}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := string(raw)
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &StatusError{Code: resp.StatusCode, Message: msg}
	}
	if err := protojson.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", path, err)
	}
	return nil
}
