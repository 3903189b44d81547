package call

// This file says what an outcome record holds and how a tool call's end is
// named in the audit log and the history.

import (
	"strings"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
)

// outcomeScope says where an outcome record goes.
type outcomeScope int

// outcomeBody is what an outbox record asks to write.
type outcomeBody struct {
	RunID      string                  `json:"run"`
	ToolCallID string                  `json:"call"`
	ToolName   string                  `json:"tool"`
	Kind       capabilityv1.ScriptKind `json:"kind"`
	Scope      outcomeScope            `json:"scope"`
	// AwaitingReview: the call waited for a person, so what answered it is
	// no host result.
	AwaitingReview bool   `json:"awaiting_review,omitempty"`
	Reviewer       string `json:"reviewer,omitempty"`
	// ReviewTime and At are unix nanoseconds; ReviewTime 0 is none.
	ReviewTime int64 `json:"review_time,omitempty"`
	At         int64 `json:"at"`
	// Attempt is the audit log's number of the sending that ended (0: the
	// latest, as records put before attempts were kept say). Named, so that
	// a record written after the call was sent again, by a sweep standing
	// in for the replica that decided, ends the sending it describes.
	Attempt int32 `json:"attempt,omitempty"`
}

// reviewed adds who declined, and when, to b.
func (b outcomeBody) reviewed(dec *orchestratorv1.ReviewDecision) outcomeBody {
	b.Reviewer = dec.GetReviewer()
	if t := dec.GetDecideTime(); t != nil {
		b.ReviewTime = t.AsTime().UnixNano()
	}
	return b
}

// toolOutcome names how a tool call ended, for the audit log and the history.
func toolOutcome(kind capabilityv1.ScriptKind, c *orchestratorv1.MailboxDelivery, noResult bool) (capabilityv1.DispatchOutcome, string, string) {
	hr := c.GetResult()
	errType := hr.GetError().GetType()
	if f, ok := asCourierFailure(c); ok && !noResult {
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NOT_DELIVERED, strings.TrimPrefix(f.GetCode().String(), "ERROR_CODE_"), "not_delivered"
	}
	switch {
	case noResult:
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NO_RESULT, "", "no_result"
	case hr.GetPreviewed() && errType == "":
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_PREVIEWED, "", "previewed"
	case hr.GetError().GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_DECLINED:
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED, errType, "declined"
	case kind == capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION && hr.GetCommitted():
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, "", "committed"
	case kind == capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION:
		if errType == "" {
			errType = "NotCommitted"
		}
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, errType, "rolled_back"
	case kind == capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION:
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_READ_ONLY, errType, "read_only"
	}
	if errType != "" {
		return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED, errType, "failed"
	}
	return capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED, "", "view"
}
