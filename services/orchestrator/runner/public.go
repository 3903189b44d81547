package runner

import (
	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
	"nexus.local/services/orchestrator/call"
)

func phaseEnum(p phase) agentv1.Phase {
	switch p {
	case phaseInitial:
		return agentv1.Phase_PHASE_INITIAL
	case phasePostDataCollection:
		return agentv1.Phase_PHASE_POST_DATA_COLLECTION
	case phaseEdit:
		return agentv1.Phase_PHASE_EDIT
	case phaseVerify:
		return agentv1.Phase_PHASE_VERIFY
	case phaseSummary:
		return agentv1.Phase_PHASE_SUMMARY
	}
	return agentv1.Phase_PHASE_UNSPECIFIED
}

// stopReasonEnum is a model turn's stop reason as clients (and the run
// state) keep it; a turn that names none ended its turn.
func stopReasonEnum(r modelv1.StopReason) agentv1.StopReason {
	switch r {
	case modelv1.StopReason_STOP_REASON_MAX_TOKENS:
		return agentv1.StopReason_STOP_REASON_MAX_TOKENS
	case modelv1.StopReason_STOP_REASON_REFUSAL:
		return agentv1.StopReason_STOP_REASON_REFUSAL
	case modelv1.StopReason_STOP_REASON_TOOL_USE:
		return agentv1.StopReason_STOP_REASON_TOOL_USE
	}
	return agentv1.StopReason_STOP_REASON_END_TURN
}

// vendorFailure is a model turn that failed at the vendor; what says which
// turn, e.g. "the model turn failed: ".
func vendorFailure(e *modelv1.TurnError, what string) *call.RunError {
	return &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, VendorCode: enumname.Short(e.GetCode()), Message: what + e.GetMessage(), Retryable: e.GetRetryable()}
}

func tokenUsage(u *modelv1.Usage) *agentv1.TokenUsage {
	if u == nil {
		return nil
	}
	return &agentv1.TokenUsage{
		InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(),
		CacheReadTokens: u.GetCacheReadTokens(), CacheWriteTokens: u.GetCacheWriteTokens(),
		ReasoningTokens: u.GetReasoningTokens(), CostUsd: u.GetCostUsd(),
	}
}

func epilogueStamp(s *capabilityv1.StampedScript) *agentv1.EpilogueStamp {
	if s == nil {
		return nil
	}
	return &agentv1.EpilogueStamp{HostApp: s.GetHostApp(), CapabilityVersion: s.GetCapabilityVersion(), ContentHash: s.GetContentHash()}
}
