package modelrouter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// maxErrorBody caps how much of an error response is read into the message.
const maxErrorBody = 8 << 10

// vendorIdleConns is how many idle connections to each vendor host the
// router keeps for the next turn. A replica streams hundreds of turns at
// once to a handful of hosts; Go's default transport keeps two a host, so
// nearly every turn after a busy moment paid a new TCP and TLS handshake.
const vendorIdleConns = 512

// newCaller returns a caller with its own transport: Go's defaults (proxy
// from the environment, HTTP/2 where the vendor offers it, 90 s idle
// timeout) with room for a busy replica's idle connections.
func newCaller(idle time.Duration) *caller {
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = d.Clone()
	}
	// Go's default also bounds idle connections to all hosts at 100.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, vendorIdleConns
	return &caller{client: &http.Client{Transport: tr}, idle: idle}
}

// caller sends requests to vendors and gives up on a stream that goes quiet.
type caller struct {
	client *http.Client
	// idle is how long a response may send nothing before it is abandoned.
	idle time.Duration
}

// idleError ends a request whose vendor stopped sending.
type idleError struct{ after time.Duration }

func (e idleError) Error() string { return fmt.Sprintf("the vendor sent nothing for %s", e.after) }

// idleCause returns the idle error that cancelled ctx, or err unchanged.
func idleCause(ctx context.Context, err error) error {
	var ie idleError
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return err
}

// post sends body and returns the response when it is 200, or a *vendorError
// carrying the vendor's own message otherwise. The body it returns cancels
// the request when it stays silent for c.idle.
func (c *caller) post(ctx context.Context, vendor, url string, headers map[string]string, body any) (*http.Response, error) {
	noteVendorStep(ctx, "request built")
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", vendor, err)
	}
	noteVendorStep(ctx, "request encoded")
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(c.idle, func() { cancel(idleError{after: c.idle}) })
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, fmt.Errorf("build %s request: %w", vendor, err)
	}
	noteServer(ctx, req.URL)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		timer.Stop()
		err = idleCause(ctx, err)
		cancel(nil)
		return nil, &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_UNAVAILABLE, Message: err.Error(), Retryable: true}
	}
	resp.Body = &idleBody{ReadCloser: resp.Body, ctx: ctx, timer: timer, idle: c.idle, cancel: cancel, first: httptrace.ContextClientTrace(ctx) != nil}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	code, retryable := statusCode(resp.StatusCode)
	return nil, &vendorError{
		Vendor: vendor, Status: resp.StatusCode, Code: code, Retryable: retryable,
		Message: errorMessage(msg), RetryAfter: parseRetryAfter(resp.Header, time.Now()),
	}
}

// idleBody re-arms the silence timer whenever data arrives.
type idleBody struct {
	io.ReadCloser
	ctx    context.Context
	timer  *time.Timer
	idle   time.Duration
	cancel context.CancelCauseFunc
	// first says the first bytes of a traced request's body are still to
	// be noted.
	first bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
		if b.first {
			b.first = false
			noteVendorStep(b.ctx, "first body bytes")
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = idleCause(b.ctx, err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
