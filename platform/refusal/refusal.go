// Package refusal builds and reads the typed refusals of Nexus: a gRPC
// status whose details hold one google.rpc.ErrorInfo (domain "nexus") whose
// reason names a value of agentv1.RefusalReason. The sentence of the status
// is for a person; a client decides by the reason.
package refusal

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Domain is the ErrorInfo domain of every refusal of Nexus.
const Domain = "nexus"

// Limit metadata keys: the input limit a LIMIT_REACHED refusal names.
const (
	LimitName    = "limit_name"
	LimitSetting = "limit_setting"
	LimitMax     = "limit_max"
	LimitActual  = "limit_actual"
)

// Reason is a refusal's reason.
type Reason = agentv1.RefusalReason

// New is a status error with code and msg whose ErrorInfo says reason;
// metadata (key, value pairs) rides along in the ErrorInfo.
func New(code codes.Code, reason Reason, msg string, metadata ...string) error {
	return Status(code, reason, msg, metadata...).Err()
}

// Newf is New with a formatted sentence.
func Newf(code codes.Code, reason Reason, format string, args ...any) error {
	return New(code, reason, fmt.Sprintf(format, args...))
}

// Status is the status New makes.
func Status(code codes.Code, reason Reason, msg string, metadata ...string) *status.Status {
	st := status.New(code, msg)
	info := &errdetails.ErrorInfo{Reason: reason.String(), Domain: Domain}
	if len(metadata) > 1 {
		info.Metadata = map[string]string{}
		for i := 0; i+1 < len(metadata); i += 2 {
			info.Metadata[metadata[i]] = metadata[i+1]
		}
	}
	with, err := st.WithDetails(info)
	if err != nil {
		// ErrorInfo always marshals; keep the status without it rather
		// than lose the refusal.
		return st
	}
	return with
}

// Info is the ErrorInfo of a Nexus refusal in st, or nil.
func Info(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			return info
		}
	}
	return nil
}

// Of is the reason of err: the one its ErrorInfo names, or else the one its
// gRPC code implies (a status without details, from gRPC itself or a peer
// of another kind).
func Of(err error) Reason {
	if err == nil {
		return agentv1.RefusalReason_REFUSAL_REASON_UNSPECIFIED
	}
	st, ok := status.FromError(err)
	if !ok {
		var withStatus interface{ GRPCStatus() *status.Status }
		if !errors.As(err, &withStatus) {
			return agentv1.RefusalReason_REFUSAL_REASON_INTERNAL
		}
		st = withStatus.GRPCStatus()
	}
	return OfStatus(st)
}

// OfStatus is Of for a status.
func OfStatus(st *status.Status) Reason {
	if info := Info(st); info != nil {
		if v, ok := agentv1.RefusalReason_value[info.GetReason()]; ok {
			return Reason(v)
		}
	}
	return ByCode(st.Code())
}

// ByCode is the reason a refusal without one is read as, from its code.
func ByCode(c codes.Code) Reason {
	switch c {
	case codes.OK:
		return agentv1.RefusalReason_REFUSAL_REASON_UNSPECIFIED
	case codes.InvalidArgument, codes.OutOfRange:
		return agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD
	case codes.Unauthenticated:
		return agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED
	case codes.ResourceExhausted:
		return agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED
	case codes.Unavailable:
		return agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE
	case codes.DeadlineExceeded:
		return agentv1.RefusalReason_REFUSAL_REASON_TIMEOUT
	case codes.Canceled:
		return agentv1.RefusalReason_REFUSAL_REASON_CANCELLED
	case codes.Unimplemented:
		return agentv1.RefusalReason_REFUSAL_REASON_ROUTE_NOT_FOUND
	}
	return agentv1.RefusalReason_REFUSAL_REASON_INTERNAL
}

// Wrap is err's refusal with its sentence prefixed by what (a peer's
// refusal passed on): code, reason and metadata are kept.
func Wrap(err error, code codes.Code, what string) error {
	st := status.Convert(err)
	out := status.New(code, what+": "+st.Message())
	if info := Info(st); info != nil {
		if with, werr := out.WithDetails(info); werr == nil {
			return with.Err()
		}
	}
	return out.Err()
}
