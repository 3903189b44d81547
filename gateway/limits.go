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

// enforceLimits reads the body of every request with one, checks it against
// the limits, and hands next an identical body. Nothing over a limit is
// forwarded.
func enforceLimits(lim Limits, bodyTimeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		// The body must arrive within the body timeout of the request's
		// start; then the deadline is lifted, since a run's response
		// streams for as long as the run lasts.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(requestStart(r).Add(bodyTimeout))
		body, err := readBody(w, r, lim, bodyTimeout)
		if err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			w.Header().Set("Connection", "close")
		}
		if err == nil && !isDocumentUpload(r) {
			err = checkBody(r.URL.Path, body, lim)
		}
		var le *limitError
		switch {
		case errors.As(err, &le):
			info := le.info
			writeJSONError(w, le.status, codes.InvalidArgument, le.Error(), &info)
			return
		case err != nil:
			writeJSONError(w, http.StatusBadRequest, codes.InvalidArgument, err.Error(), nil)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func readBody(w http.ResponseWriter, r *http.Request, lim Limits, timeout time.Duration) ([]byte, error) {
	max, name, setting := lim.MaxBodyBytes, "body_bytes", "NEXUS_MAX_BODY_BYTES"
	if strings.HasSuffix(r.URL.Path, "/tool-results") {
		max, name, setting = lim.MaxToolResultBytes, "tool_result_bytes", "NEXUS_MAX_TOOL_RESULT_BYTES"
	}
	if isDocumentUpload(r) {
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

// requestMessage is the message a POST to path decodes into, or nil.
func requestMessage(path string) proto.Message {
	switch {
	case path == "/v1/sessions":
		return &agentv1.CreateSessionRequest{}
	case strings.HasSuffix(path, "/runs"):
		return &agentv1.RunRequest{}
	case strings.HasSuffix(path, "/runs:start"):
		return &agentv1.StartRunRequest{}
	case strings.HasSuffix(path, "/tool-results"):
		return &agentv1.SubmitToolResultRequest{}
	case strings.HasSuffix(path, ":cancel"):
		return &agentv1.CancelRunRequest{}
	}
	return nil
}

func checkBody(path string, body []byte, lim Limits) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if strings.HasPrefix(path, "/v1/") {
		if err := textError(body); err != nil {
			return err
		}
	}
	if d := jsonDepth(body); d > lim.MaxJSONDepth {
		return &limitError{status: http.StatusBadRequest, info: limitInfo{Name: "json_depth", Setting: "NEXUS_MAX_JSON_DEPTH", Max: int64(lim.MaxJSONDepth), Actual: int64(d)}}
	}
	msg := requestMessage(path)
	if msg == nil {
		return nil
	}
	if err := requestDecoding().Unmarshal(body, msg); err != nil {
		return errors.New(bodyError(err))
	}
	switch req := msg.(type) {
	case interface{ GetPrompt() string }:
		if n := len(req.GetPrompt()); n > lim.MaxPromptBytes {
			return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "prompt_bytes", Setting: "NEXUS_MAX_PROMPT_BYTES", Max: int64(lim.MaxPromptBytes), Actual: int64(n)}}
		}
	case *agentv1.SubmitToolResultRequest:
		images := req.GetResult().GetImages()
		if len(images) > lim.MaxImages {
			return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "images", Setting: "NEXUS_MAX_IMAGES", Max: int64(lim.MaxImages), Actual: int64(len(images))}}
		}
		for _, img := range images {
			if n := len(img.GetData()); n > lim.MaxImageBytes {
				return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "image_bytes", Setting: "NEXUS_MAX_IMAGE_BYTES", Max: int64(lim.MaxImageBytes), Actual: int64(n)}}
			}
			if err := imagetype.Check(img.GetMimeType()); err != nil {
				return fmt.Errorf("result image: %w", err)
			}
		}
	}
	return nil
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
