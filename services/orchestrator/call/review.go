package call

import (
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/tool"
)

// needsReview says whether a call of tool waits for a person under policy.
func needsReview(policy agentv1.ReviewPolicy, toolName string) bool {
	switch policy {
	case agentv1.ReviewPolicy_REVIEW_POLICY_NONE:
		return false
	case agentv1.ReviewPolicy_REVIEW_POLICY_EVERY_SCRIPT:
		return toolName == tool.DataCollection || toolName == tool.TaskAutomation
	}
	return toolName == tool.TaskAutomation
}

// EffectivePolicy is the policy a session gets when it names none: the
// preview, so the person decides on an effect they saw and never on a retry
// (a script that fails goes back to the model, since the rollback made it
// free).
func EffectivePolicy(p agentv1.ReviewPolicy) agentv1.ReviewPolicy {
	if p == agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED {
		return agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW
	}
	return p
}
