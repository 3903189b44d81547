package metrics

import (
	"testing"

	"nexus.local/services/orchestrator/tool"
)

// TestToolLabel shows that a tool name the model made up does not become a
// metric label value.
func TestToolLabel(t *testing.T) {
	cases := []struct{ name, want string }{
		{tool.DataCollection, tool.DataCollection},
		{tool.TaskAutomation, tool.TaskAutomation},
		{tool.CaptureView, tool.CaptureView},
		{"rm_rf_everything_" + "1234", "unknown"},
		{"", "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.want+" "+tc.name, func(t *testing.T) {
			if got := toolLabel(tc.name); got != tc.want {
				t.Errorf("toolLabel(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}
