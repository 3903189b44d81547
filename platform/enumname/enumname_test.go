package enumname

import (
	"slices"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
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
