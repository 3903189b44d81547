package call

import (
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

func TestToolOutcome(t *testing.T) {
	auto, read := capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION
	view := capabilityv1.ScriptKind_SCRIPT_KIND_UNSPECIFIED
	tests := []struct {
		name     string
		kind     capabilityv1.ScriptKind
		result   *hostv1.HostResult
		noResult bool
		want     capabilityv1.DispatchOutcome
		errType  string
		history  string
	}{
		{"commit", auto, &hostv1.HostResult{Committed: true}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, "", "committed"},
		{"rollback", auto, &hostv1.HostResult{Error: &hostv1.ExecError{Type: "NameError"}}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, "NameError", "rolled_back"},
		{"not committed without an error", auto, &hostv1.HostResult{}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, "NotCommitted", "rolled_back"},
		{"declined", auto, &hostv1.HostResult{Error: &hostv1.ExecError{Type: "Declined", Condition: hostv1.ExecCondition_EXEC_CONDITION_DECLINED}}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED, "Declined", "declined"},
		{"no result", auto, nil, true, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NO_RESULT, "", "no_result"},
		{"read-only", read, &hostv1.HostResult{Stdout: "3"}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_READ_ONLY, "", "read_only"},
		{"read-only that raised", read, &hostv1.HostResult{Error: &hostv1.ExecError{Type: "KeyError"}}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_READ_ONLY, "KeyError", "read_only"},
		{"view", view, &hostv1.HostResult{}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED, "", "view"},
		{"view that failed", view, &hostv1.HostResult{Error: &hostv1.ExecError{Type: "RuntimeError"}}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED, "RuntimeError", "failed"},
	}
	t.Run("courier failure", func(t *testing.T) {
		f := CourierDelivery(&agentv1.CourierFailure{Code: agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE})
		o, errType, name := toolOutcome(auto, f, false)
		if o != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NOT_DELIVERED || errType != "HOST_UNREACHABLE" || name != "not_delivered" {
			t.Fatalf("got %v %q %q, want not delivered, HOST_UNREACHABLE", o, errType, name)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, errType, name := toolOutcome(tt.kind, state.ResultDelivery(tt.result), tt.noResult)
			if o != tt.want || errType != tt.errType || name != tt.history {
				t.Fatalf("want %v %q %q, got %v %q %q", tt.want, tt.errType, tt.history, o, errType, name)
			}
		})
	}
}
