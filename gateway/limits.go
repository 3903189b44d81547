package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/imagetype"
	"nexus.local/platform/rpc"
)

// grpcSizes finds the sizes in gRPC's refusal, "... larger than max (6291461 vs. 4194304)".
const grpcSizes = `\((\d+) vs\. (\d+)\)`

// sizeRefusal turns gRPC refusing a message over its size limit into a 413
// naming the limit: gRPC says ResourceExhausted, which maps to 429 and tells
// a client to retry what can never pass.
func sizeRefusal(err error) (*limitError, bool) {
	if !rpc.IsMessageTooLarge(err) {
		return nil, false
	}
	info := limitInfo{Name: "message_bytes", Setting: "the mesh's gRPC message limit", Max: rpc.MaxMessageBytes}
	if m := regexp.MustCompile(grpcSizes).FindStringSubmatch(status.Convert(err).Message()); m != nil {
		info.Actual, _ = strconv.ParseInt(m[1], 10, 64)
		info.Max, _ = strconv.ParseInt(m[2], 10, 64)
	}
	return &limitError{status: http.StatusRequestEntityTooLarge, info: info}, true
}

// checkMeshLimits refuses gateway limits the services behind it could not
// carry, so nothing the gateway accepts is refused one hop on.
func checkMeshLimits(l Limits) error {
	if l.MaxToolResultBytes > rpc.MaxToolResultBytes {
		return fmt.Errorf("NEXUS_MAX_TOOL_RESULT_BYTES=%d: over %d, the largest result a gRPC message of the mesh (%d bytes) carries",
			l.MaxToolResultBytes, rpc.MaxToolResultBytes, rpc.MaxMessageBytes)
	}
	if l.MaxDocumentBytes > rpc.MaxToolResultBytes {
		return fmt.Errorf("NEXUS_MAX_DOCUMENT_BYTES=%d: over %d, the largest document a gRPC message of the mesh (%d bytes) carries",
			l.MaxDocumentBytes, rpc.MaxToolResultBytes, rpc.MaxMessageBytes)
	}
	if l.MaxBodyBytes > rpc.MaxToolResultBytes {
		return fmt.Errorf("NEXUS_MAX_BODY_BYTES=%d: over %d, the largest body a gRPC message of the mesh (%d bytes) carries",
			l.MaxBodyBytes, rpc.MaxToolResultBytes, rpc.MaxMessageBytes)
	}
	return nil
}

// limitError is a request over one of the input limits.
type limitError struct {
	status int
	info   limitInfo
	// msg replaces the usual sentence when set.
	msg string
}

func (e *limitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("%s is %d, over the limit of %d (%s)", e.info.Name, e.info.Actual, e.info.Max, e.info.Setting)
}

// readLimited reads the body of r once, checks it against the limits of
// its route, decodes it once into the route's message and hands it on as
// r's body; it answers a body over a limit and returns false. Nothing over
// a limit is forwarded.
func readLimited(w http.ResponseWriter, r *http.Request, rt *route.Route, lim Limits, bodyTimeout time.Duration) (*http.Request, bool) {
	if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return r, true
	}
	// The body must arrive within the body timeout of the request's
	// start; then the deadline is lifted, since a run's response
	// streams for as long as the run lasts.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(requestStart(r).Add(bodyTimeout))
	body, err := readBody(w, r, rt, lim, bodyTimeout)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		w.Header().Set("Connection", "close")
	}
	var msg proto.Message
	if err == nil && rt.Body != route.Document {
		msg, err = checkBody(r.URL.Path, rt, body, lim)
	}
	var le *limitError
	var be *bodyDecodeError
	switch {
	case errors.As(err, &le):
		writeLimitProblem(w, le)
		return nil, false
	case errors.As(err, &be):
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_BODY, be.Error(), nil)
		return nil, false
	case err != nil:
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_BODY, err.Error(), nil)
		return nil, false
	}
	r.Body = &decodedBody{Reader: bytes.NewReader(body), msg: msg}
	r.ContentLength = int64(len(body))
	return r, true
}

// decodedBody is a body read and decoded once: the routes take its message
// rather than decode the bytes again.
type decodedBody struct {
	*bytes.Reader
	// msg is the body decoded into the route's message, or nil when the
	// route takes none or the body was empty.
	msg proto.Message
}

func (*decodedBody) Close() error { return nil }

// decodedFrom is the message r's body was decoded into, or nil.
func decodedFrom(r *http.Request) proto.Message {
	if b, ok := r.Body.(*decodedBody); ok {
		return b.msg
	}
	return nil
}

// bodyDecodeError is a body that is not its route's JSON.
type bodyDecodeError struct{ err error }

func (e *bodyDecodeError) Error() string { return bodyError(e.err) }

func readBody(w http.ResponseWriter, r *http.Request, rt *route.Route, lim Limits, timeout time.Duration) ([]byte, error) {
	max, name, setting := lim.MaxBodyBytes, "body_bytes", "NEXUS_MAX_BODY_BYTES"
	switch rt.Body {
	case route.ToolResult:
		max, name, setting = lim.MaxToolResultBytes, "tool_result_bytes", "NEXUS_MAX_TOOL_RESULT_BYTES"
	case route.Document:
		max, name, setting = lim.MaxDocumentBytes, "document_bytes", "NEXUS_MAX_DOCUMENT_BYTES"
	}
	tooLarge := func(actual int64) error {
		return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: name, Setting: setting, Max: max, Actual: actual}}
	}
	if r.ContentLength > max {
		return nil, tooLarge(r.ContentLength)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		// The body's length is unknown (chunked); report the first byte past the limit.
		return nil, tooLarge(max + 1)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, &limitError{status: http.StatusRequestTimeout,
			msg:  fmt.Sprintf("the request body did not arrive within %s (NEXUS_HTTP_BODY_TIMEOUT)", timeout),
			info: limitInfo{Name: "body_seconds", Setting: "NEXUS_HTTP_BODY_TIMEOUT", Max: int64(timeout.Seconds()), Actual: int64(time.Since(requestStart(r)).Seconds())}}
	}
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// requestDecoding is how every JSON body is decoded, here and by the routes:
// protojson, strict. A key the message does not have is refused, and so is a
// field given twice (under its proto name and its JSON name, say), so the
// limits below are checked on exactly the value the route will use.
func requestDecoding() protojson.UnmarshalOptions { return protojson.UnmarshalOptions{} }

// checkBody checks a JSON body against the limits and decodes it into the
// route's message, which it returns (nil for an empty body or a route
// without one).
func checkBody(path string, rt *route.Route, body []byte, lim Limits) (proto.Message, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if strings.HasPrefix(path, "/v1/") {
		if err := textError(body); err != nil {
			return nil, err
		}
	}
	if d := jsonDepth(body); d > lim.MaxJSONDepth {
		return nil, &limitError{status: http.StatusBadRequest, info: limitInfo{Name: "json_depth", Setting: "NEXUS_MAX_JSON_DEPTH", Max: int64(lim.MaxJSONDepth), Actual: int64(d)}}
	}
	if rt.Request == nil {
		return nil, nil
	}
	msg := rt.Request()
	if err := requestDecoding().Unmarshal(body, msg); err != nil {
		return nil, &bodyDecodeError{err: err}
	}
	switch req := msg.(type) {
	case interface{ GetPrompt() string }:
		if n := len(req.GetPrompt()); n > lim.MaxPromptBytes {
			return nil, &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "prompt_bytes", Setting: "NEXUS_MAX_PROMPT_BYTES", Max: int64(lim.MaxPromptBytes), Actual: int64(n)}}
		}
	case *agentv1.SubmitToolResultRequest:
		images := req.GetResult().GetImages()
		if len(images) > lim.MaxImages {
			return nil, &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "images", Setting: "NEXUS_MAX_IMAGES", Max: int64(lim.MaxImages), Actual: int64(len(images))}}
		}
		for _, img := range images {
			if n := len(img.GetData()); n > lim.MaxImageBytes {
				return nil, &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "image_bytes", Setting: "NEXUS_MAX_IMAGE_BYTES", Max: int64(lim.MaxImageBytes), Actual: int64(n)}}
			}
			if err := imagetype.Check(img.GetMimeType()); err != nil {
				return nil, fmt.Errorf("result image: %w", err)
			}
		}
	}
	return msg, nil
}

// jsonDepth returns the deepest nesting of objects and arrays in b, without
// building the value, so a hostile body costs one pass.
func jsonDepth(b []byte) int {
	depth, max := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}
