package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
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

func TestApplyEdits(t *testing.T) {
	script := "a = 1\nb = 2\nif a:\n    c = 3\n    d = 4\nprint(a, b)\n"
	tests := []struct {
		name      string
		edits     []lineEdit
		want      string
		wantNotes []string
	}{
		{"one-line edit changes one line", []lineEdit{{2, 2, "b = 20"}},
			"a = 1\nb = 20\nif a:\n    c = 3\n    d = 4\nprint(a, b)", nil},
		{"insert before a line", []lineEdit{{2, 1, "z = 0"}},
			"a = 1\nz = 0\nb = 2\nif a:\n    c = 3\n    d = 4\nprint(a, b)", nil},
		{"delete lines", []lineEdit{{4, 4, ""}},
			"a = 1\nb = 2\nif a:\n    d = 4\nprint(a, b)", nil},
		{"edits use the original numbering", []lineEdit{{1, 1, "a = 10"}, {6, 6, "print(a)"}},
			"a = 10\nb = 2\nif a:\n    c = 3\n    d = 4\nprint(a)", nil},
		{"a duplicated line is noted", []lineEdit{{3, 3, "b = 2\nif a:"}},
			"a = 1\nb = 2\nb = 2\nif a:\n    c = 3\n    d = 4\nprint(a, b)", []string{"repeats line 2"}},
		{"an indentation change is noted", []lineEdit{{4, 4, "c = 3"}},
			"a = 1\nb = 2\nif a:\nc = 3\n    d = 4\nprint(a, b)", []string{"indentation"}},
		{"a script that shrank by half is noted", []lineEdit{{2, 6, "print(a)"}},
			"a = 1\nprint(a)", []string{"shrank from 6 to 2 lines"}},
		{"an edit outside the script is clamped and noted", []lineEdit{{9, 9, "print('end')"}},
			"a = 1\nb = 2\nif a:\n    c = 3\n    d = 4\nprint(a, b)\nprint('end')", []string{"outside the script"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := applyEdits(script, tt.edits)
			if got != tt.want {
				t.Errorf("merged =\n%s\nwant\n%s", got, tt.want)
			}
			if len(notes) != len(tt.wantNotes) {
				t.Fatalf("notes = %q, want %d matching %q", notes, len(tt.wantNotes), tt.wantNotes)
			}
			for i, w := range tt.wantNotes {
				if !strings.Contains(notes[i], w) {
					t.Errorf("note %q does not mention %q", notes[i], w)
				}
			}
		})
	}
}

func TestResolvePhase(t *testing.T) {
	cfg := Config{HeavyMaxTokens: 32000, LightMaxTokens: 4000}
	tests := []struct {
		name   string
		sess   *agentv1.Session
		capped bool
		want   phase
		budget int
	}{
		{"a fresh session writes its first script", &agentv1.Session{}, false, phaseInitial, 32000},
		{"data came back", &agentv1.Session{LastCompletedTool: toolDataCollection}, false, phasePostDataCollection, 32000},
		{"a held script may be edited", &agentv1.Session{CurrentScript: "x", LastCompletedTool: toolTaskAutomation}, false, phaseEdit, 32000},
		{"a commit is verified", &agentv1.Session{CurrentScript: "x", LastCompletedTool: toolTaskAutomation, LastTaskCommitted: true}, false, phaseVerify, 4000},
		{"a cap means summary", &agentv1.Session{CurrentScript: "x"}, true, phaseSummary, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolvePhase(tt.sess, tt.capped); got != tt.want || cfg.budget(got) != tt.budget {
				t.Errorf("phase %s with budget %d, want %s with %d", got, cfg.budget(got), tt.want, tt.budget)
			}
		})
	}
}

func TestAppendPromptKeepsRolesAlternating(t *testing.T) {
	use := &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{Id: "t1", Name: toolDataCollection}}}
	msgs := appendPrompt([]*modelv1.Message{
		{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: "first"}}}}},
		{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{use}},
	}, "second")
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3", len(msgs))
	}
	last := msgs[2]
	if last.GetRole() != modelv1.Role_ROLE_USER || last.GetContent()[0].GetToolResult().GetToolUseId() != "t1" || last.GetContent()[1].GetText().GetText() != "second" {
		t.Errorf("last message = %v, want a result for the open call and then the prompt", last)
	}
}

func TestLoadConfigRefusesBadLimits(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero light budget", Config{HeavyMaxTokens: 1, LightMaxTokens: 0, MaxToolResultChars: 1, MaxTurns: 1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 0.5}, "NEXUS_LIGHT_MAX_TOKENS"},
		{"negative fix retries", Config{HeavyMaxTokens: 1, LightMaxTokens: 1, MaxToolResultChars: 1, MaxTurns: 1, MaxFixRetries: -1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 0.5}, "NEXUS_MAX_FIX_RETRIES"},
		{"compaction past the window", Config{HeavyMaxTokens: 1, LightMaxTokens: 1, MaxToolResultChars: 1, MaxTurns: 1, ToolResultTimeout: 1, RunLease: 1, CompactAt: 2}, "NEXUS_COMPACT_AT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestTrimViewsKeepsTheNewest(t *testing.T) {
	view := func(name string) *modelv1.ImageBlock {
		return &modelv1.ImageBlock{MimeType: "image/png", Data: []byte(name)}
	}
	result := func(id string, imgs ...*modelv1.ImageBlock) *modelv1.Message {
		return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_ToolResult{ToolResult: &modelv1.ToolResultBlock{ToolUseId: id, Text: "ok", Images: imgs}}}}}
	}
	msgs := []*modelv1.Message{result("a", view("a1"), view("a2")), result("b", view("b1")), result("c", view("c1"), view("c2"))}
	tests := []struct {
		keep int
		want [][]string
	}{
		{8, [][]string{{"a1", "a2"}, {"b1"}, {"c1", "c2"}}},
		{3, [][]string{{}, {"b1"}, {"c1", "c2"}}},
		{2, [][]string{{}, {}, {"c1", "c2"}}},
		{1, [][]string{{}, {}, {"c2"}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.keep), func(t *testing.T) {
			got := trimViews(msgs, tt.keep)
			for i, m := range got {
				tr := m.GetContent()[0].GetToolResult()
				var names []string
				for _, img := range tr.GetImages() {
					names = append(names, string(img.GetData()))
				}
				if fmt.Sprint(names) != fmt.Sprint(tt.want[i]) {
					t.Errorf("result %d keeps %v, want %v", i, names, tt.want[i])
				}
				if len(names) < len(msgs[i].GetContent()[0].GetToolResult().GetImages()) && !strings.Contains(tr.GetText(), "omitted") {
					t.Errorf("result %d lost views without a note: %q", i, tr.GetText())
				}
			}
			if len(msgs[0].GetContent()[0].GetToolResult().GetImages()) != 2 {
				t.Fatal("the transcript itself lost a view")
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
		{"a call refused before it ran", &hostv1.HostResult{Error: &hostv1.ExecError{Type: "RevisionChanged", Condition: hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED, Message: "the document changed since the preview"}},
			[]string{"Nothing ran"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderResult(toolTaskAutomation, tc.res, 1000)
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
