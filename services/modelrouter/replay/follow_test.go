package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
)

// The tool results below are written as the orchestrator renders them
// (services/orchestrator/call/shape.go renderResult, call/decide.go
// noResultText, runner/tools.go capText, runner/turn.go AppendPrompt,
// runner/compact.go summaryPrompt), so the demo is tested against the
// transcripts it really receives.
const (
	demoPrompt = "Build a small room: four walls on a level, with a door and a window."

	emptyListing = "The read-only script ran.\n\nOutput:\nDocument Nexus: 0 objects"
	boxListing   = "The read-only script ran.\n\nOutput:\nDocument Nexus: 1 objects\n- Box (Part::Box) label='Box'"
	roomListing  = "The read-only script ran.\n\nOutput:\nDocument Nexus: 11 objects\n" +
		"- Line (Part::Part2DObjectPython) label='Line'\n" +
		"- Wall (Part::FeaturePython) label='Wall1'\n" +
		"- Wall001 (Part::FeaturePython) label='Wall2'\n" +
		"- Wall002 (Part::FeaturePython) label='Wall3'\n" +
		"- Wall003 (Part::FeaturePython) label='Wall4'\n" +
		"- Level (App::DocumentObjectGroupPython) label='Ground level'\n" +
		"- Window (Part::FeaturePython) label='Door'\n" +
		"- Window001 (Part::FeaturePython) label='Window'"
	// An Arch wall that only its type and label tell apart.
	typedWallListing = "The read-only script ran.\n\nOutput:\nDocument Nexus: 1 objects\n- Structure (Arch::Wall) label='Partition'"

	rolledBack      = "Transaction rolled back: the document is exactly as it was before this script.\n\nThe script printed nothing.\n\n"
	recordedError   = rolledBack + "Error: NameError: name 'wals' is not defined (line 27 of the script)\n  File \"<nexus>\", line 27"
	otherError      = rolledBack + "Error: ModuleNotFoundError: No module named 'Arch' (line 2 of the script)"
	declinedResult  = rolledBack + "Error: Declined: the person reviewing declined to run this script"
	noResultText    = "No result: the host did not answer within 10m0s, or the run was cancelled. It is unknown whether the script ran; inspect the document before changing it again."
	stoppedResult   = "No result: the run stopped before this call was answered."
	budgetSpent     = "The fix budget is spent (0 retries after a script that did not commit). This script was not run. Do not call execute_task_automation again in this run. Summarise honestly for the person: what was done, what is still wrong, and what they could try next."
	committedResult = "Transaction committed.\n\nOutput:\nBuilt 4 walls on Ground level with a door and a window.\n\nChanges: 11 added, 0 modified, 0 deleted."
	// A commit whose script printed words that, read anywhere, would say
	// the opposite.
	committedWordyResult = "Transaction committed.\n\nOutput:\nThe draft sketch was rolled back; the walls are not committed to a level yet.\n\nChanges: 11 added, 0 modified, 0 deleted."
	summaryRequest       = "The conversation is about to be shortened. Write a summary of everything above that the rest of the work needs: " +
		"what the person asked for, what the document contains (names, levels, counts you learned), which scripts ran and whether they committed, " +
		"what is done and what is left. Write only the summary; call no tool."
)

// wireMsg is one message of an Anthropic Messages request.
type wireMsg = map[string]any

func userSays(text string) wireMsg {
	return wireMsg{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}
}

// calls is an assistant message with tool calls; inputs are the demo's own.
func calls(t *testing.T, ids ...string) wireMsg {
	t.Helper()
	in := demoInputs(t)
	var blocks []any
	for _, id := range ids {
		var step map[string]any
		switch {
		case strings.HasPrefix(id, "inspect"):
			step = in[0]
		case strings.HasPrefix(id, "fix"):
			step = in[2]
		default:
			step = in[1]
		}
		input := map[string]any{}
		for k, v := range step {
			if k != "tool" {
				input[k] = v
			}
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": step["tool"], "input": input})
	}
	return wireMsg{"role": "assistant", "content": blocks}
}

// answer is a tool result; isError follows the orchestrator's rendering.
type answer struct {
	id, text string
	isError  bool
}

// results is the user message that answers calls, with any text after the
// results (a new prompt after a cancel, or the summary request).
func results(text string, as ...answer) wireMsg {
	var blocks []any
	for _, a := range as {
		blocks = append(blocks, map[string]any{"type": "tool_result", "tool_use_id": a.id, "is_error": a.isError,
			"content": []any{map[string]any{"type": "text", "text": a.text}}})
	}
	if text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": text})
	}
	return wireMsg{"role": "user", "content": blocks}
}

func assistantSays(text string) wireMsg {
	return wireMsg{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}
}

// reply is what one streamed turn said and called.
type reply struct {
	text  string
	tools []string
	input []string
	stop  string
}

// ask posts messages to the replay server and reads the streamed turn.
func ask(t *testing.T, base string, msgs []wireMsg) reply {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "demo", "max_tokens": 1000, "stream": true, "system": "You automate FreeCAD.", "messages": msgs,
		"tools": []any{map[string]any{"name": "execute_data_collection", "input_schema": map[string]any{"type": "object"}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/v1/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var r reply
	var text, input strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		switch {
		case ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
			r.tools = append(r.tools, ev.ContentBlock.Name)
			input.Reset()
		case ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta":
			text.WriteString(ev.Delta.Text)
		case ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta":
			input.WriteString(ev.Delta.PartialJSON)
		case ev.Type == "content_block_stop" && input.Len() > 0:
			r.input = append(r.input, input.String())
			input.Reset()
		case ev.Type == "message_delta":
			r.stop = ev.Delta.StopReason
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	r.text = text.String()
	return r
}

func startDemo(t *testing.T) string {
	t.Helper()
	c, err := LoadCassette("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	base, err := NewServer(c).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// TestDemoFollowsTranscript sends the transcripts the orchestrator builds in
// each situation and checks the demo answers what the transcript says, not
// what comes next in the recording.
func TestDemoFollowsTranscript(t *testing.T) {
	base := startDemo(t)
	// Each case is one request; tool names "" means a turn with no tool call.
	cases := []struct {
		name string
		msgs func(t *testing.T) []wireMsg
		tool string
		// input is a key the tool call's input must have.
		input string
		// want are words the text must hold (any case); built says whether the
		// text may say the room is built.
		want  []string
		built bool
	}{
		{"demo prompt fresh: the inspection", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt)}
		}, "execute_data_collection", "code", []string{"listing"}, false},
		{"alias, any case: the inspection", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays("  build a SMALL room ")}
		}, "execute_data_collection", "code", nil, false},
		{"non-demo prompt: the fallback", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays("Design a bridge.")}
		}, "", "", []string{"only knows the prompt", "ANTHROPIC_API_KEY"}, false},
		{"empty document: the automation", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false})}
		}, "execute_task_automation", "code", []string{"nothing in the way"}, false},
		{"a document with other objects: the automation", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", boxListing, false})}
		}, "execute_task_automation", "code", nil, false},
		{"the document holds a room: stop and say so", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", roomListing, false})}
		}, "", "", []string{"already holds a room", "Wall", "Wall003", "empty document", "nothing"}, false},
		{"an Arch wall by its type: stop and say so", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", typedWallListing, false})}
		}, "", "", []string{"already holds a room", "Structure"}, false},
		{"the inspection failed: stop", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect",
				"The read-only script failed.\n\nThe script printed nothing.\n\nError: RuntimeError: no document (line 3 of the script)", true})}
		}, "", "", []string{"RuntimeError: no document", "nothing"}, false},
		{"the inspection got no result: stop", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", noResultText, true})}
		}, "", "", []string{"no result came back"}, false},
		{"the script was declined", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", declinedResult, true})}
		}, "", "", []string{"declined", "nothing", "changed", "run the prompt again"}, false},
		{"the recorded mistake: the recorded fix", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true})}
		}, "execute_task_automation", "edits", []string{"wals", "rolled back"}, false},
		{"another error: say it failed and was rolled back", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", otherError, true})}
		}, "", "", []string{"failed", "ModuleNotFoundError: No module named 'Arch'", "rolled back"}, false},
		{"the fix failed too: say it failed", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", recordedError, true})}
		}, "", "", []string{"failed", "NameError: name 'wals' is not defined", "rolled back"}, false},
		{"no result from the host", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", noResultText, true})}
		}, "", "", []string{"no result came back from the host", "can't tell whether anything changed"}, false},
		{"the fix budget is spent", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", budgetSpent, false})}
		}, "", "", []string{"budget is spent", "not run", "nothing was committed"}, false},
		{"committed: the recorded summary", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", committedResult, false})}
		}, "", "", []string{"The room is built"}, true},
		{"committed, whatever the script printed: the recorded summary", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", committedWordyResult, false})}
		}, "", "", []string{"The room is built"}, true},
		{"cancelled during the build, then the demo prompt: the inspection", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results(demoPrompt, answer{"build", stoppedResult, true})}
		}, "execute_data_collection", "code", nil, false},
		{"cancelled after the mistake, then the demo prompt: the inspection", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results(demoPrompt, answer{"fix", noResultText, true})}
		}, "execute_data_collection", "code", nil, false},
		{"cancelled, then another prompt: the fallback", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("Design a bridge.", answer{"build", stoppedResult, true})}
		}, "", "", []string{"only knows the prompt"}, false},
		{"a finished run, then the prompt again on the built room: stop", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", committedResult, false}), assistantSays("The room is built."),
				userSays(demoPrompt), calls(t, "inspect2"), results("", answer{"inspect2", roomListing, false})}
		}, "", "", []string{"already holds a room"}, false},
		{"a finished run, then another prompt: the fallback", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results("", answer{"inspect", emptyListing, false}),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", committedResult, false}), assistantSays("The room is built."),
				userSays("Add a roof.")}
		}, "", "", []string{"only knows the prompt"}, false},
		{"the summary request: a summary, no tool", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results(summaryRequest, answer{"inspect", emptyListing, false})}
		}, "", "", []string{"The person's prompt", demoPrompt, "not been made yet"}, false},
		{"after a summary: the recorded fix", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays("Summary of the earlier conversation:\n" + summaryOf(t, base)),
				calls(t, "build"), results("", answer{"build", recordedError, true})}
		}, "execute_task_automation", "edits", nil, false},
		{"after a summary: the fix budget is spent", func(t *testing.T) []wireMsg {
			return []wireMsg{userSays("Summary of the earlier conversation:\n" + summaryOf(t, base)),
				calls(t, "build"), results("", answer{"build", recordedError, true}),
				calls(t, "fix"), results("", answer{"fix", budgetSpent, false})}
		}, "", "", []string{"budget is spent"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ask(t, base, tc.msgs(t))
			t.Logf("called %v, said %q", got.tools, got.text)
			switch {
			case tc.tool == "" && len(got.tools) > 0:
				t.Errorf("called %v, want no tool call; text %q", got.tools, got.text)
			case tc.tool != "" && (len(got.tools) != 1 || got.tools[0] != tc.tool):
				t.Errorf("called %v, want %s; text %q", got.tools, tc.tool, got.text)
			case tc.tool != "" && !strings.Contains(got.input[0], `"`+tc.input+`"`):
				t.Errorf("the call's input %s has no %q", got.input[0], tc.input)
			}
			if want := map[bool]string{true: "tool_use", false: "end_turn"}[tc.tool != ""]; got.stop != want {
				t.Errorf("stop reason %q, want %q", got.stop, want)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(got.text), strings.ToLower(w)) {
					t.Errorf("text %q does not say %q", got.text, w)
				}
			}
			if !tc.built && strings.Contains(strings.ToLower(got.text), "built") {
				t.Errorf("text %q says built, but nothing committed", got.text)
			}
		})
	}
}

// summaryOf is the summary the demo writes when asked after the inspection,
// as the orchestrator's compaction asks it.
func summaryOf(t *testing.T, base string) string {
	t.Helper()
	got := ask(t, base, []wireMsg{userSays(demoPrompt), calls(t, "inspect"), results(summaryRequest, answer{"inspect", emptyListing, false})})
	if got.text == "" || len(got.tools) > 0 {
		t.Fatalf("summary turn: text %q, calls %v", got.text, got.tools)
	}
	return got.text
}

// TestOrchestratorWording checks the texts the demo reads in a transcript are
// still how the orchestrator, the router and the web UI word them; a change
// there would leave the demo misreading results without a failing case here.
func TestOrchestratorWording(t *testing.T) {
	cases := []struct {
		file, text string
	}{
		{"../../orchestrator/runner/compact.go", markSummaryRequest},
		{"../prepare.go", markSummary},
		{"../../orchestrator/call/shape.go", `b.WriteString("\nError: ")`},
		{"../../orchestrator/call/review.go", `Type: enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_DECLINED)`},
		{"../../orchestrator/call/decide.go", `"No result: the host did not answer`},
		{"../../orchestrator/runner/toolloop.go", `"No result: the run stopped before this call was answered."`},
		{"../../orchestrator/runner/toolloop.go", `"Not run: the run stopped before this call."`},
		{"../../orchestrator/runner/tools.go", `"The %s budget is spent (%d %s). This script was not run. "`},
		{"../../orchestrator/call/shape.go", `"` + markCommitted + `\n"`},
		{"../../orchestrator/call/shape.go", `"Transaction rolled back: the document is exactly as it was before this script.\n"`},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			src, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), tc.text) {
				t.Errorf("%s no longer holds %s; update the marks in follow.go to its wording", tc.file, tc.text)
			}
		})
	}
}
