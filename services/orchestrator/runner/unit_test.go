package runner

import (
	"fmt"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/tool"
)

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
	cfg := call.Limits{HeavyMaxTokens: 32000, LightMaxTokens: 4000}
	tests := []struct {
		name   string
		sess   *agentv1.Session
		capped bool
		want   phase
		budget int
	}{
		{"a fresh session writes its first script", &agentv1.Session{}, false, phaseInitial, 32000},
		{"data came back", &agentv1.Session{LastCompletedTool: tool.DataCollection}, false, phasePostDataCollection, 32000},
		{"a held script may be edited", &agentv1.Session{CurrentScript: "x", LastCompletedTool: tool.TaskAutomation}, false, phaseEdit, 32000},
		{"a commit is verified", &agentv1.Session{CurrentScript: "x", LastCompletedTool: tool.TaskAutomation, LastTaskCommitted: true}, false, phaseVerify, 4000},
		{"a cap means summary", &agentv1.Session{CurrentScript: "x"}, true, phaseSummary, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolvePhase(tt.sess, tt.capped); got != tt.want || budget(cfg, got) != tt.budget {
				t.Errorf("phase %s with budget %d, want %s with %d", got, budget(cfg, got), tt.want, tt.budget)
			}
		})
	}
}

func TestAppendPromptKeepsRolesAlternating(t *testing.T) {
	use := &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{Id: "t1", Name: tool.DataCollection}}}
	msgs := AppendPrompt([]*modelv1.Message{
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
