package mcphost

import (
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

func TestRollbackSentenceSaysWhatTheHostSaid(t *testing.T) {
	raised := &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}
	cases := []struct {
		name      string
		res       *hostv1.HostResult
		want      string
		forbidden string
	}{
		{"exact", &hostv1.HostResult{Error: raised, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT}, "exactly as before", "not exactly"},
		{"not exact", &hostv1.HostResult{Error: raised, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT, RollbackDifferences: []string{"Line: End"}},
			"What still differs: Line: End.", "is exactly as before"},
		{"unspecified", &hostv1.HostResult{Error: raised}, "did not verify", "is exactly as before"},
		{"refused", &hostv1.HostResult{Error: &hostv1.ExecError{Type: "CallIdReused", Condition: hostv1.ExecCondition_EXEC_CONDITION_CALL_ID_REUSED}},
			"before anything ran", "rolled back"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rollbackSentence(tc.res)
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.forbidden) {
				t.Fatalf("rollbackSentence = %q; want it to contain %q and not %q", got, tc.want, tc.forbidden)
			}
		})
	}
}
