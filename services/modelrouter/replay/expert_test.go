package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"nexus.local/eval"
)

// conversationOf builds a Messages API request: the prompt, then each
// (tool, code, result) as a tool call and its answer.
func conversationOf(t *testing.T, prompt string, calls ...[3]string) conversation {
	t.Helper()
	msgs := []map[string]any{{"role": "user", "content": prompt}}
	for i, c := range calls {
		id := "toolu_" + string(rune('a'+i))
		input, _ := json.Marshal(map[string]string{"code": c[1]})
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": id, "name": c[0], "input": json.RawMessage(input)}}},
			map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": id, "content": c[2], "is_error": strings.Contains(c[2], "Error: ")}}})
	}
	raw, err := json.Marshal(map[string]any{"model": ExpertModel, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	return read(req)
}

func toolOf(turn Turn) (name, code string) {
	for _, b := range turn.Content {
		if b.Type == "tool_use" {
			var in struct{ Code string }
			_ = json.Unmarshal(b.Input, &in)
			return b.Name, in.Code
		}
	}
	return "", ""
}

func textOf(turn Turn) string {
	var parts []string
	for _, b := range turn.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, " ")
}

// TestExpertTurns walks the expert through a task: it inspects, plays the
// reference, answers; a reference script that fails ends the run with the
// failure said plainly, and a prompt it does not know gets no tool call.
func TestExpertTurns(t *testing.T) {
	e, err := LoadExpert()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]eval.Task{}
	for _, task := range e.tasks {
		byID[task.ID] = task
	}
	room := byID["01-room"]
	ref := room.Reference.Scripts[0]
	committed := "Transaction committed.\n\nOutput:\n4 walls on Level 1\n\nChange report:\n..."

	if name, _ := toolOf(e.next(conversationOf(t, "Build me a castle"))); name != "" {
		t.Errorf("an unknown prompt got a %s call", name)
	}
	if name, code := toolOf(e.next(conversationOf(t, room.Prompt))); name != toolInspect || code != expertListing {
		t.Errorf("the first turn calls %s, want the listing by %s", name, toolInspect)
	}
	listed := [3]string{toolInspect, expertListing, "The read-only script ran.\n\nOutput:\nDocument Unnamed: 0 objects\n"}
	if name, code := toolOf(e.next(conversationOf(t, room.Prompt, listed))); name != toolAutomate || code != ref {
		t.Errorf("after the listing the expert calls %s with %q, want the reference script by %s", name, code, toolAutomate)
	}
	failed := [3]string{toolAutomate, ref, "Transaction rolled back: the document is exactly as it was before this script.\n\nError: NameError: name 'Arch' is not defined (line 3 of the script)\n"}
	turn := e.next(conversationOf(t, room.Prompt, listed, failed))
	if name, _ := toolOf(turn); name != "" || !strings.Contains(textOf(turn), "did not succeed: NameError") {
		t.Errorf("after a failed reference script the expert says %q (and calls %q), want the failure and no call", textOf(turn), name)
	}
	turn = e.next(conversationOf(t, room.Prompt, listed, [3]string{toolAutomate, ref, committed}))
	if name, _ := toolOf(turn); name != "" || !strings.Contains(textOf(turn), "4 walls on Level 1") {
		t.Errorf("after the commit the expert says %q (and calls %q), want its summary and no call", textOf(turn), name)
	}

	count := byID["21-count-doors-level-1"]
	answered := [3]string{toolInspect, count.Reference.Scripts[0], "The read-only script ran.\n\nOutput:\nDoors on Level 1: 3\n"}
	turn = e.next(conversationOf(t, count.Prompt, listed, answered))
	if got := textOf(turn); got != "Answer: Doors on Level 1: 3" {
		t.Errorf("the inspection's answer is %q, want what its script printed", got)
	}
}
