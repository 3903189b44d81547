package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// apiError is a refused call, with the server's status name (gRPC code or
// the gateway's code) and the refusal's reason, which callers decide by.
type apiError struct {
	what, where, status, message string
	reason                       agentv1.RefusalReason
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (%s): %s %s: %s", e.what, e.where, e.status, e.reason, e.message)
}

// reasonOf is the reason the server refused err with, or UNSPECIFIED.
func reasonOf(err error) agentv1.RefusalReason {
	var e *apiError
	if errors.As(err, &e) {
		return e.reason
	}
	return agentv1.RefusalReason_REFUSAL_REASON_UNSPECIFIED
}

// isConflict reports a decision refused because the call was decided
// another way (another reviewer, a timeout, a cancel) or no longer waits.
func isConflict(err error) bool {
	switch reasonOf(err) {
	case agentv1.RefusalReason_REFUSAL_REASON_ALREADY_DECIDED, agentv1.RefusalReason_REFUSAL_REASON_NOT_AWAITING_REVIEW,
		agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL:
		return true
	}
	return false
}

// isUnavailable reports a server that went away or is going.
func isUnavailable(err error) bool {
	switch reasonOf(err) {
	case agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, agentv1.RefusalReason_REFUSAL_REASON_SHUTTING_DOWN:
		return true
	}
	return false
}

// problemError reads the gateway's RFC 9457 problem: its reason, its code
// and its detail; a body of another kind is shown as it came.
func problemError(what, where string, resp *http.Response) *apiError {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p struct {
		Detail string `json:"detail"`
		Reason string `json:"reason"`
		Code   string `json:"code"`
	}
	e := &apiError{what: what, where: where, status: resp.Status, message: strings.TrimSpace(string(data))}
	if json.Unmarshal(data, &p) == nil && p.Reason != "" {
		e.status, e.message = p.Code, p.Detail
		e.reason = agentv1.RefusalReason(agentv1.RefusalReason_value[p.Reason])
	}
	if e.reason == agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED {
		e.message += " (set NEXUS_API_KEY to a key the gateway accepts)"
	}
	return e
}
