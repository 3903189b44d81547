package orchestrator

import (
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
)

// The public package has its own types and closed sets, so clients never
// depend on the internal contracts between services. These functions are
// the one place where internal values become public ones.

// toolNameEnum names a tool for clients; a name the model made up is
// unspecified.
func toolNameEnum(name string) agentv1.ToolName {
	switch name {
	case toolDataCollection:
		return agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION
	case toolTaskAutomation:
		return agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION
	case toolCaptureView:
		return agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW
	}
	return agentv1.ToolName_TOOL_NAME_UNSPECIFIED
}

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

// public is the error as clients see it: the code as it is, no default.
func (e *runError) public() *agentv1.Error {
	return &agentv1.Error{Code: e.code, VendorCode: e.vendorCode, Message: e.message, Retryable: e.retryable}
}

// vendorFailure is a model turn that failed at the vendor; what says which
// turn, e.g. "the model turn failed: ".
func vendorFailure(e *modelv1.TurnError, what string) *runError {
	return &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, vendorCode: enumname.Short(e.GetCode()), message: what + e.GetMessage(), retryable: e.GetRetryable()}
}

// isCourierFailure says whether c is one of the failures a courier may
// report instead of a result.
func isCourierFailure(c agentv1.ErrorCode) bool {
	switch c {
	case agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE, agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED,
		agentv1.ErrorCode_ERROR_CODE_HOST_NOT_PAIRED, agentv1.ErrorCode_ERROR_CODE_HOST_MISMATCH:
		return true
	}
	return false
}

// errorCodeName is the short name the run history and metrics keep for an
// error: the vendor's code for a vendor failure, else the enum's, e.g.
// "cancelled".
func errorCodeName(e *agentv1.Error) string {
	if e.GetVendorCode() != "" {
		return e.GetVendorCode()
	}
	return codeName(e.GetCode())
}

// codeName is an error code's short name, e.g. "host_unreachable".
func codeName(c agentv1.ErrorCode) string { return enumname.Short(c) }

// firstRunes cuts s to at most n runes.
func firstRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
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

// publicModel is a catalog model as clients see it: the vendor as the
// model id's prefix names it ("openai-compat"), the features by their short
// names ("prompt_cache").
func publicModel(m *modelv1.ModelInfo) *agentv1.Model {
	vendor, _, _ := strings.Cut(m.GetId(), "/")
	features := make([]string, 0, len(m.GetFeatures()))
	for _, f := range m.GetFeatures() {
		features = append(features, enumname.Short(f))
	}
	return &agentv1.Model{
		Id: m.GetId(), Vendor: vendor, DisplayName: m.GetDisplayName(), ContextWindow: m.GetContextWindow(),
		Features: features, Available: m.GetAvailable(), Note: m.GetNote(),
		InputPrice: m.GetPricing().GetInput(), OutputPrice: m.GetPricing().GetOutput(),
	}
}

func publicHost(h *capabilityv1.HostProvider) *agentv1.Host {
	return &agentv1.Host{HostApp: h.GetHostApp(), DisplayName: h.GetDisplayName(), CapabilityVersion: h.GetCapabilityVersion(), Language: h.GetLanguage()}
}

func epilogueStamp(s *capabilityv1.StampedScript) *agentv1.EpilogueStamp {
	if s == nil {
		return nil
	}
	return &agentv1.EpilogueStamp{HostApp: s.GetHostApp(), CapabilityVersion: s.GetCapabilityVersion(), ContentHash: s.GetContentHash()}
}
