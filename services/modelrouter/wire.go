package modelrouter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
)

// turn is one prepared request, vendor-neutral until an adapter renders it.
type turn struct {
	entry           *ModelEntry
	system          string
	messages        []*modelv1.Message
	tools           []toolDef
	maxTokens       int32
	sessionID       string
	allowCompaction bool
}

// toolDef is a tool with its schema parsed once.
type toolDef struct {
	name        string
	description string
	schema      json.RawMessage
}

// adapter speaks one vendor's wire format.
type adapter interface {
	// stream sends the turn, emits events as they arrive and returns the end
	// of the turn (usage without cost). Errors are *vendorError where known.
	stream(ctx context.Context, t *turn, out *emitter) (*modelv1.TurnEnd, error)
}

// emitter forwards events to the caller and remembers whether any was sent,
// because that decides whether a failed turn may be retried.
type emitter struct {
	send    func(*modelv1.StreamTurnResponse) error
	sent    bool
	sendErr error
}

func (e *emitter) emit(ev *modelv1.StreamTurnResponse) error {
	if err := e.send(ev); err != nil {
		e.sendErr = err
		return err
	}
	e.sent = true
	return nil
}

func (e *emitter) thinking(s string) error {
	if s == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Thinking{Thinking: &modelv1.TextDelta{Text: s}}})
}

func (e *emitter) text(s string) error {
	if s == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Text{Text: &modelv1.TextDelta{Text: s}}})
}

func (e *emitter) toolInput(id, name, partial string) error {
	if partial == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_ToolInputDelta{ToolInputDelta: &modelv1.ToolInputDelta{
		ToolCallId: id, ToolName: name, PartialJson: partial,
	}}})
}

// vendorError is a failed vendor call, classified for retrying.
type vendorError struct {
	Vendor     string
	Status     int
	Code       modelv1.TurnErrorCode
	Message    string
	Retryable  bool
	RetryAfter time.Duration
}

func (e *vendorError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d %s: %s", e.Vendor, e.Status, enumname.Short(e.Code), e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Vendor, enumname.Short(e.Code), e.Message)
}

// asVendorError classifies any error from an adapter; transport failures are
// retryable because nothing reached the model.
func asVendorError(vendor string, err error) *vendorError {
	var ve *vendorError
	if errors.As(err, &ve) {
		return ve
	}
	return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_UNAVAILABLE, Message: err.Error(), Retryable: true}
}

// statusCode maps an HTTP status to a TurnError code and whether a retry may help.
func statusCode(status int) (modelv1.TurnErrorCode, bool) {
	switch {
	case status == http.StatusTooManyRequests:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_RATE_LIMITED, true
	case status == 529:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, true
	case status == http.StatusRequestTimeout:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_TIMEOUT, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_UNAUTHORIZED, false
	case status == http.StatusNotFound:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_NOT_FOUND, false
	case status == http.StatusRequestEntityTooLarge:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_REQUEST_TOO_LARGE, false
	case status >= 500:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, true
	default:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_INVALID_REQUEST, false
	}
}

// streamErrorCode maps an error type named inside a vendor stream.
func streamErrorCode(kind string) (modelv1.TurnErrorCode, bool) {
	switch {
	case strings.Contains(kind, "overloaded"), strings.Contains(kind, "unavailable"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, true
	case strings.Contains(kind, "rate_limit"), strings.Contains(kind, "resource_exhausted"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_RATE_LIMITED, true
	case strings.Contains(kind, "api_error"), strings.Contains(kind, "server_error"), strings.Contains(kind, "internal"):
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, true
	default:
		return modelv1.TurnErrorCode_TURN_ERROR_CODE_VENDOR_ERROR, false
	}
}

// backoff is how long to wait before attempt+1: the vendor's retry-after when
// given, else an exponential delay with jitter, never more than limit.
func backoff(attempt int, retryAfter, base, limit time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, limit)
	}
	d := base << attempt
	if d <= 0 || d > limit {
		d = limit
	}
	return d/2 + rand.N(d/2+1)
}

// parseRetryAfter reads retry-after-ms or retry-after (seconds or a date).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

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
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", vendor, err)
	}
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
	resp.Body = &idleBody{ReadCloser: resp.Body, ctx: ctx, timer: timer, idle: c.idle, cancel: cancel}
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
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
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

// errorMessage pulls the message out of the JSON error bodies vendors send
// ({"error":{"message":...}} or a list of those), else returns the raw text.
func errorMessage(body []byte) string {
	var one struct {
		Error struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &one) == nil && one.Error.Message != "" {
		return strings.TrimSpace(one.Error.Type + one.Error.Status + ": " + one.Error.Message)
	}
	var many []json.RawMessage
	if json.Unmarshal(body, &many) == nil && len(many) > 0 {
		return errorMessage(many[0])
	}
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "no error body"
	}
	return s
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// sseReader reads server-sent events from a response body.
type sseReader struct {
	sc *bufio.Scanner
}

// maxSSELine bounds one line of a stream; vendors put whole JSON objects
// (with encrypted reasoning) on one data line.
const maxSSELine = 32 << 20

// firstSSEBuffer is a stream's first line buffer; the scanner doubles it
// for a longer line. Most events are well under 1 KiB, and a buffer of
// 64 KiB a turn was the router's largest allocation.
const firstSSEBuffer = 4 << 10

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, firstSSEBuffer), maxSSELine)
	return &sseReader{sc: sc}
}

// next returns the next event, or io.EOF when the stream ended cleanly.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data [][]byte
	seen := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if seen {
				ev.data = bytes.Join(data, []byte("\n"))
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
			seen = true
		case "data":
			data = append(data, append([]byte(nil), value...))
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return ev, err
	}
	if seen {
		ev.data = bytes.Join(data, []byte("\n"))
		return ev, nil
	}
	return ev, io.EOF
}

// streamCut is the error when a stream ends before the vendor said it was done.
func streamCut(vendor string, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, Message: "the stream ended before the turn was complete", Retryable: true}
	}
	return &vendorError{Vendor: vendor, Code: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, Message: err.Error(), Retryable: true}
}
