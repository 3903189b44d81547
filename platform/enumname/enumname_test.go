package enumname

import (
	"slices"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// TestShortAndParse shows the short names round-trip and that the zero
// value and unknown names have none.
func TestShortAndParse(t *testing.T) {
	if got := Short(modelv1.TurnErrorCode_TURN_ERROR_CODE_RATE_LIMITED); got != "rate_limited" {
		t.Errorf("Short(RATE_LIMITED) = %q", got)
	}
	if got := Short(agentv1.ErrorCode_ERROR_CODE_HOST_NOT_PAIRED); got != "host_not_paired" {
		t.Errorf("Short(HOST_NOT_PAIRED) = %q", got)
	}
	if got := Short(modelv1.TurnErrorCode_TURN_ERROR_CODE_UNSPECIFIED); got != "" {
		t.Errorf("Short(UNSPECIFIED) = %q, want empty", got)
	}
	if got := Short(modelv1.TurnErrorCode(999)); got != "" {
		t.Errorf("Short(999) = %q, want empty", got)
	}
	d := modelv1.ModelFeature(0).Descriptor()
	for _, name := range Names(d) {
		n, ok := Parse(d, name)
		if !ok || Short(modelv1.ModelFeature(n)) != name {
			t.Errorf("Parse(%q) = %v, %v", name, n, ok)
		}
	}
	if !slices.Contains(Names(d), "prompt_cache") || len(Names(d)) != len(modelv1.ModelFeature_name)-1 {
		t.Errorf("Names = %v", Names(d))
	}
	for _, bad := range []string{"", "unspecified", "telepathy"} {
		if n, ok := Parse(d, bad); ok {
			t.Errorf("Parse(%q) = %v, want none", bad, n)
		}
	}
}

// TestCamel shows the CamelCase names a host runtime writes round-trip.
func TestCamel(t *testing.T) {
	if got := Camel(hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED); got != "RevisionChanged" {
		t.Errorf("Camel(REVISION_CHANGED) = %q", got)
	}
	d := hostv1.ExecCondition(0).Descriptor()
	for _, name := range []string{"CallIdReused", "HostRuntimeError", "Declined"} {
		n, ok := ParseCamel(d, name)
		if !ok || Camel(hostv1.ExecCondition(n)) != name {
			t.Errorf("ParseCamel(%q) = %v, %v", name, n, ok)
		}
	}
	if n, ok := ParseCamel(d, "NameError"); ok {
		t.Errorf("ParseCamel(NameError) = %v, want none: a script's own exception", n)
	}
}
