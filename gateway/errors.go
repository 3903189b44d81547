package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/logging"
	"nexus.local/platform/refusal"
)

// problemType is the type of every problem the gateway answers: the
// reason field, not a URI per kind, says which refusal it is (RFC 9457 §4.2.1).
const problemType = "about:blank"

// problemContentType is the media type of every error body (RFC 9457 §3).
const problemContentType = "application/problem+json"

// problem is the body of every error the gateway answers: an RFC 9457
// problem detail with the refusal's reason as an extension member.
type problem struct {
	Type string `json:"type"`
	// Title is the HTTP status's text.
	Title string `json:"title"`
	// Status is the HTTP status.
	Status int `json:"status"`
	// Detail is what failed and what to do, for a person.
	Detail string `json:"detail"`
	// Reason is the RefusalReason value a client decides by.
	Reason string `json:"reason"`
	// Code is the gRPC code name, e.g. NOT_FOUND.
	Code string `json:"code"`
	// Limit names the input limit a request broke, with its setting, the
	// maximum and what the request carried.
	Limit *limitInfo `json:"limit,omitempty"`
}

type limitInfo struct {
	Name    string `json:"name"`
	Setting string `json:"setting"`
	Max     int64  `json:"max"`
	Actual  int64  `json:"actual"`
}

// writeProblem answers a refusal as application/problem+json.
func writeProblem(w http.ResponseWriter, httpStatus int, code codes.Code, reason refusal.Reason, msg string, lim *limitInfo) {
	w.Header().Set("Content-Type", problemContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(problem{
		Type: problemType, Title: http.StatusText(httpStatus), Status: httpStatus, Detail: msg,
		Reason: reason.String(), Code: statusName(httpStatus, code), Limit: lim,
	})
}

// writeLimitProblem answers a request over one of the input limits.
func writeLimitProblem(w http.ResponseWriter, le *limitError) {
	info := le.info
	writeProblem(w, le.status, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, le.Error(), &info)
}

// statusName is the status an error with this HTTP status and gRPC code
// says. The HTTP statuses with a meaning of their own say it whatever code
// led to them, so that status and code always agree: every 409 is ABORTED
// (the request conflicts with the session's state), every 413
// REQUEST_ENTITY_TOO_LARGE, every 405 METHOD_NOT_ALLOWED.
func statusName(httpStatus int, code codes.Code) string {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		return "METHOD_NOT_ALLOWED"
	case http.StatusRequestTimeout:
		return "REQUEST_TIMEOUT"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusRequestEntityTooLarge:
		return "REQUEST_ENTITY_TOO_LARGE"
	case http.StatusMisdirectedRequest:
		return "MISDIRECTED_REQUEST"
	}
	return codeName(code)
}

// httpStatusOf is the HTTP status of an orchestrator error. A request that
// conflicts with the state of its session (a second run while one is
// active, a result for a call that is not pending, a different decision or
// result for a call already decided) is 409, whichever of FailedPrecondition,
// Aborted or AlreadyExists the orchestrator said; the rest follow the Google
// API error model.
func httpStatusOf(c codes.Code) int {
	switch c {
	case codes.FailedPrecondition, codes.Aborted, codes.AlreadyExists:
		return http.StatusConflict
	}
	return runtime.HTTPStatusFromCode(c)
}

// codeName spells a gRPC code the way the Google API error model does.
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Aborted:
		return "ABORTED"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Internal:
		return "INTERNAL"
	default:
		return strings.ToUpper(c.String())
	}
}

// writeStatusError answers a gRPC error as JSON with the HTTP status that
// matches its code (NotFound is 404, so another caller's session looks absent).
func writeStatusError(ctx context.Context, w http.ResponseWriter, err error) {
	if le, ok := sizeRefusal(err); ok {
		writeLimitProblem(w, le)
		return
	}
	st := status.Convert(err)
	writeProblem(w, httpStatusOf(st.Code()), st.Code(), refusal.OfStatus(st), clientMessage(ctx, st), limitOf(st))
}

// limitOf is the input limit a refusal of the orchestrator names, or nil.
func limitOf(st *status.Status) *limitInfo {
	md := refusal.Info(st).GetMetadata()
	if md[refusal.LimitName] == "" {
		return nil
	}
	max, _ := strconv.ParseInt(md[refusal.LimitMax], 10, 64)
	actual, _ := strconv.ParseInt(md[refusal.LimitActual], 10, 64)
	return &limitInfo{Name: md[refusal.LimitName], Setting: md[refusal.LimitSetting], Max: max, Actual: actual}
}

// clientMessage is what a client is told of a gRPC error: what failed and
// what to do, never an internal address. Failures of the machinery behind
// the gateway get a fixed sentence; their detail goes to the log.
func clientMessage(ctx context.Context, st *status.Status) string {
	switch st.Code() {
	case codes.Unavailable, codes.Unknown, codes.Internal, codes.DataLoss, codes.DeadlineExceeded:
		logging.FromContext(ctx).Warn("backend error", "code", st.Code().String(), "err", st.Message())
		if st.Code() == codes.DeadlineExceeded {
			return "the service did not answer in time; retry shortly"
		}
		if st.Code() == codes.Unavailable {
			return "the service is unavailable right now; retry shortly"
		}
		return "the service failed to handle the request; retry, and report it if it persists"
	}
	msg := scrubAddresses(st.Message())
	if st.Code() == codes.InvalidArgument {
		// The routes' JSON decoding refused the body; say so in the words
		// the gateway's own decoding uses.
		if rest, ok := strings.CutPrefix(msg, "proto: "); ok {
			msg = "request body: " + rest
		}
	}
	return msg
}

// bodyError says why a request body could not be decoded, naming the field
// for an unknown one: `request body: (line 1:22): unknown field "colour"`.
func bodyError(err error) string {
	return "request body: " + strings.TrimPrefix(err.Error(), "proto: ")
}

// scrubAddresses replaces IP addresses (with their ports) in msg, so a
// message written for a person never maps the network behind the gateway.
func scrubAddresses(msg string) string {
	ip := regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|\[[0-9a-fA-F:]+\](:\d+)?`)
	return ip.ReplaceAllString(msg, "<internal address>")
}

// grpcErrorHandler answers errors of the generated unary routes.
func grpcErrorHandler(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	writeStatusError(ctx, w, err)
}

// routingErrorHandler answers requests no route matches.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		writeProblem(w, httpStatus, codes.Unimplemented, agentv1.RefusalReason_REFUSAL_REASON_METHOD_NOT_ALLOWED, "method "+r.Method+" is not allowed on "+r.URL.Path, nil)
	case http.StatusNotFound:
		writeNotFound(w, r)
	default:
		writeProblem(w, httpStatus, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST, http.StatusText(httpStatus), nil)
	}
}

func writeNotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, http.StatusNotFound, codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_ROUTE_NOT_FOUND, "no route for "+r.Method+" "+r.URL.Path, nil)
}

func writeMethodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeProblem(w, http.StatusMethodNotAllowed, codes.Unimplemented, agentv1.RefusalReason_REFUSAL_REASON_METHOD_NOT_ALLOWED, "method "+r.Method+" is not allowed on "+r.URL.Path+"; use "+allow, nil)
}
