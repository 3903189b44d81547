package mcpserver

import (
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// TestPreviewOutcomeSaysWhatTheHostSaid holds what an MCP client's person is
// told about a preview to the host's own fields: only a rollback the host
// called exact reads "rolled back exactly"; a failed preview reads failed,
// and an inexact one names what still differs.
func TestPreviewOutcomeSaysWhatTheHostSaid(t *testing.T) {
	tests := []struct {
		name      string
		res       *hostv1.HostResult
		want, not string
	}{
		{"exact", &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT}, "rolled back exactly", "NOT"},
		{"not exact", &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT,
			RollbackDifferences: []string{"Line: Placement"}}, "NOT exactly (still differs: Line: Placement)", "rolled back exactly"},
		{"unsaid", &hostv1.HostResult{Previewed: true}, "did not say whether exactly", "rolled back exactly"},
		{"verified by element", &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT,
			RollbackVerified: "verified for the 3 elements the transaction touched"},
			"rolled back (verified for the 3 elements the transaction touched)", "rolled back exactly"},
		{"failed", &hostv1.HostResult{Error: &hostv1.ExecError{Type: "NameError", Message: "name 'Arch' is not defined"}},
			"the preview failed (NameError: name 'Arch' is not defined)", "rolled back exactly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := previewOutcome(tt.res)
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
				t.Errorf("previewOutcome = %q, want it to say %q and not %q", got, tt.want, tt.not)
			}
		})
	}
}
