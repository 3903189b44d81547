package call

import (
	"fmt"
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/tool"
)

func TestShapeForModel(t *testing.T) {
	distinct := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "row %d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name     string
		in       string
		max      int
		wantNote string
		wantLen  int // upper bound of the shaped text before the note
	}{
		{"small distinct output is untouched", "a\nb\nc", 100, "", 5},
		{"repeated rows are removed", "a\na\na\nb", 100, noteDedup, 3},
		{"long distinct output is capped", distinct(1000), 200, noteCap, 200},
		{"repeats and length give both", strings.Repeat("same\n", 50) + distinct(1000), 200, noteDedupAndCap, 200},
		{"blank lines are not rows", "a\n\n\nb", 100, "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shapeForModel(tt.in, tt.max)
			notes := 0
			for _, n := range []string{noteDedup, noteCap, noteDedupAndCap} {
				notes += strings.Count(got, n)
			}
			if tt.wantNote == "" {
				if got != tt.in {
					t.Errorf("got %q, want it unchanged", got)
				}
				return
			}
			if notes != 1 || !strings.HasSuffix(got, "\n\n"+tt.wantNote) {
				t.Fatalf("got %q, want exactly the note %q at the end", got, tt.wantNote)
			}
			if body := strings.TrimSuffix(got, "\n\n"+tt.wantNote); len(body) > tt.wantLen {
				t.Errorf("shaped text is %d characters, want at most %d", len(body), tt.wantLen)
			}
		})
	}
}

// longDistinct is n characters or more of rows that differ, which shaping
// caps and cannot de-duplicate.
func longDistinct(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "row %d\n", i)
	}
	return b.String()
}

func TestRenderResultSaysWhetherTheRollbackWasExact(t *testing.T) {
	exact, notExact := hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT, hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT
	cases := []struct {
		name string
		res  *hostv1.HostResult
		want []string
	}{
		{"an exact rollback", &hostv1.HostResult{Rollback: exact, Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}},
			[]string{"Transaction rolled back: the document is exactly as it was"}},
		// The field alone says it: the message carries no text about it.
		{"a rollback the host could not make exact", &hostv1.HostResult{Rollback: notExact, RollbackDifferences: []string{"could not restore ['Wall001']"},
			Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}},
			[]string{"rolled back, but not exactly", "What still differs: could not restore ['Wall001']."}},
		{"a failed preview rollback", &hostv1.HostResult{Rollback: notExact, Error: &hostv1.ExecError{Type: "RollbackFailed", Message: "the checkpoint could not be reloaded"}},
			[]string{"rolled back, but not exactly"}},
		{"a commit whose report script left a change", &hostv1.HostResult{Committed: true, Rollback: notExact, RollbackDifferences: []string{"could not restore ['Probe']"}},
			[]string{"Transaction committed.", "rollback was not exact", "What still differs: could not restore ['Probe']."}},
		// A host that says nothing of a rollback it made has not verified it.
		{"a rollback the host said nothing of", &hostv1.HostResult{Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}},
			[]string{"Transaction rolled back, not verified", "Inspect the document"}},
		{"a preview rolled back exactly", &hostv1.HostResult{Previewed: true, Rollback: exact},
			[]string{"Previewed, then rolled back: the document is exactly as it was"}},
		{"a preview whose rollback is not exact", &hostv1.HostResult{Previewed: true, Rollback: notExact, RollbackDifferences: []string{"Line: Placement differs"}},
			[]string{"Previewed, then rolled back, but not exactly", "What still differs: Line: Placement differs."}},
		// Shaping caps the script's output, never what the host said of
		// the rollback: the model's copy keeps the field and every
		// difference the host named.
		{"an inexact rollback under a capped output", &hostv1.HostResult{Rollback: notExact, Stdout: longDistinct(5000),
			RollbackDifferences: []string{"Line: End, Start", "#300000 Walls \"Basic Wall\": Location", "and 3 more object(s)"},
			Error:               &hostv1.ExecError{Type: "RuntimeError", Message: "raised"}},
			[]string{"rolled back, but not exactly", "What still differs: Line: End, Start; #300000 Walls \"Basic Wall\": Location; and 3 more object(s).", noteCap}},
		{"an exact rollback under a capped output", &hostv1.HostResult{Rollback: exact, Stdout: longDistinct(5000),
			Error: &hostv1.ExecError{Type: "RuntimeError", Message: "raised"}},
			[]string{"Transaction rolled back: the document is exactly as it was", noteCap}},
		{"a preview the host said nothing of", &hostv1.HostResult{Previewed: true},
			[]string{"Previewed, then rolled back, not verified"}},
		// A host that compared only what the transaction touched says so,
		// and the model is told no more than that.
		{"a rollback verified by element", &hostv1.HostResult{Rollback: exact, RollbackVerified: "verified for the 3 elements the transaction touched",
			Error: &hostv1.ExecError{Type: "RuntimeError", Message: "raised"}},
			[]string{"Transaction rolled back, verified for the 3 elements the transaction touched: as it was before this script."}},
		{"an inexact rollback verified by element", &hostv1.HostResult{Rollback: notExact, RollbackVerified: "verified for the 1 element the transaction touched",
			RollbackDifferences: []string{"not restored: #300000 Walls: Comments"}, Error: &hostv1.ExecError{Type: "RuntimeError", Message: "raised"}},
			[]string{"rolled back, but not exactly", "What the host compared: verified for the 1 element the transaction touched."}},
		{"a dialog the host answered", &hostv1.HostResult{Committed: true, HostNotes: []string{`Revit showed a task dialog while the script ran: "Keep going?"; the add-in answered Cancel so Revit was not held waiting for a person`}},
			[]string{"Transaction committed.", `Host note: Revit showed a task dialog while the script ran: "Keep going?"; the add-in answered Cancel`}},
		{"a call refused before it ran", &hostv1.HostResult{Error: &hostv1.ExecError{Type: "RevisionChanged", Condition: hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED, Message: "the document changed since the preview"}},
			[]string{"Nothing ran"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderResult(tool.TaskAutomation, tc.res, 1000)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("model told:\n%s\nwant it to say %q", got, w)
				}
			}
			if tc.res.GetRollback() != exact && strings.Contains(got, "is exactly as it was") {
				t.Errorf("model told the document is exactly as before although the host did not say so:\n%s", got)
			}
		})
	}
}
