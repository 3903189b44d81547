package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%s is %d, over the limit of %d (%s)", e.info.Name, e.info.Actual, e.info.Max, e.info.Setting)
}

// enforceLimits reads the body of every request with one, checks it against
// the limits, and hands next an identical body. Nothing over a limit is
// forwarded.
func enforceLimits(lim Limits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(w, r, lim)
		if err == nil {
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

func readBody(w http.ResponseWriter, r *http.Request, lim Limits) ([]byte, error) {
	max, name, setting := lim.MaxBodyBytes, "body_bytes", "NEXUS_MAX_BODY_BYTES"
	if strings.HasSuffix(r.URL.Path, "/tool-results") {
		max, name, setting = lim.MaxToolResultBytes, "tool_result_bytes", "NEXUS_MAX_TOOL_RESULT_BYTES"
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
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

func checkBody(path string, body []byte, lim Limits) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if d := jsonDepth(body); d > lim.MaxJSONDepth {
		return &limitError{status: http.StatusBadRequest, info: limitInfo{Name: "json_depth", Setting: "NEXUS_MAX_JSON_DEPTH", Max: int64(lim.MaxJSONDepth), Actual: int64(d)}}
	}
	switch {
	case strings.HasSuffix(path, "/runs"):
		var req struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("request body is not valid JSON: %w", err)
		}
		if len(req.Prompt) > lim.MaxPromptBytes {
			return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "prompt_bytes", Setting: "NEXUS_MAX_PROMPT_BYTES", Max: int64(lim.MaxPromptBytes), Actual: int64(len(req.Prompt))}}
		}
	case strings.HasSuffix(path, "/tool-results"):
		var req struct {
			Result struct {
				Images []struct {
					Data string `json:"data"`
				} `json:"images"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("request body is not valid JSON: %w", err)
		}
		images := req.Result.Images
		if len(images) > lim.MaxImages {
			return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "images", Setting: "NEXUS_MAX_IMAGES", Max: int64(lim.MaxImages), Actual: int64(len(images))}}
		}
		for _, img := range images {
			if n := base64Len(img.Data); n > lim.MaxImageBytes {
				return &limitError{status: http.StatusRequestEntityTooLarge, info: limitInfo{Name: "image_bytes", Setting: "NEXUS_MAX_IMAGE_BYTES", Max: int64(lim.MaxImageBytes), Actual: int64(n)}}
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

// base64Len is the decoded size of standard or URL-safe base64 text.
func base64Len(s string) int {
	s = strings.TrimRight(s, "=")
	return len(s) * 3 / 4
}
