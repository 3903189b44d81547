package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

func TestRendererChunks(t *testing.T) {
	meta := func(m *agentv1.Metadata) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: m}}
	}
	delta := func(id, js string) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{ToolCallId: id, ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, PartialJson: js}}}
	}
	call := func(id, code string) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: &agentv1.ToolCall{ToolCallId: id, ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION,
			HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{Code: code}}}}}
	}
	tests := []struct {
		name   string
		chunks []*agentv1.StreamChunk
		want   string
	}{
		{"script typed in pieces, not repeated by the call", []*agentv1.StreamChunk{
			delta("c1", `{"code":"a = 1\n`), delta("c1", `b = 2"}`), call("c1", "a = 1\nb = 2"),
		}, "── a script that changes the document ──\na = 1\nb = 2\n→ Changes the document\n"},
		{"line edits show the merged script", []*agentv1.StreamChunk{
			delta("c2", `{"edits":[{"start_line":2,"end_line":2,"new_text":"b = 3"}]}`), call("c2", "a = 1\nb = 3"),
		}, "── a script that changes the document ──\na = 1\nb = 3\n→ Changes the document\n"},
		{"a call without a typed script shows it", []*agentv1.StreamChunk{call("c3", "x = 1\n")},
			"── a script that changes the document ──\nx = 1\n\n→ Changes the document\n"},
		{"a typed script its preview run repeats under its own id shows once", []*agentv1.StreamChunk{
			delta("c8", `{"code":"y = 2\n"}`), call("c8.preview1", "y = 2\n"), call("c8", "y = 2\n"),
		}, "── a script that changes the document ──\ny = 2\n\n→ Changes the document\n"},
		{"a call the stream repeats (preview, review, commit) shows once", []*agentv1.StreamChunk{
			call("c4.preview1", "x = 1\n"), call("c4", "x = 1\n"), call("c4", "x = 1\n"),
		}, "── a script that changes the document ──\nx = 1\n\n→ Changes the document\n"},
		{"a fix after a failure shows as a diff", []*agentv1.StreamChunk{
			call("c5", "a = 1\nb = wals\nc = 3\nd = 4\ne = 5\nf = 6\n"),
			meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{ToolCallId: "c5",
				Result: &hostv1.HostResult{Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT, Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}}}}}),
			delta("c6", `{"code":"a = 1\nb = walls\n`), delta("c6", `c = 3\nd = 4\ne = 5\nf = 6\n"}`),
			call("c6", "a = 1\nb = walls\nc = 3\nd = 4\ne = 5\nf = 6\n"),
		}, "── a script that changes the document ──\na = 1\nb = wals\nc = 3\nd = 4\ne = 5\nf = 6\n\n→ Changes the document\n\n" +
			"✗ rolled back: NameError: name 'wals' is not defined\n\n" +
			"── the fix: what changed from the script that failed ──\n@@ line 1 @@\n  a = 1\n- b = wals\n+ b = walls\n  c = 3\n  d = 4\n\n→ Changes the document\n"},
		{"a commit reporting what its preview did says so", []*agentv1.StreamChunk{
			call("c7.preview1", "x = 1\n"),
			meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{ToolCallId: "c7.preview1", Preview: true,
				Result: &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT, Epilogue: &hostv1.EpilogueResult{Stdout: "+ Wall"}}}}}),
			call("c7", "x = 1\n"),
			meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{ToolCallId: "c7",
				Result: &hostv1.HostResult{Committed: true, Epilogue: &hostv1.EpilogueResult{Stdout: "+ Wall"}}}}}),
		}, "── a script that changes the document ──\nx = 1\n\n→ Changes the document\n\n✓ previewed and rolled back: nothing was kept\nchanges:\n  + Wall\n" +
			"✓ committed\nchanges: as the preview reported them above\n"},
		{"context summarized", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ContextSummarized{ContextSummarized: &agentv1.ContextSummarized{}}})},
			"── context summarized ──\n"},
		{"a call waits for a host", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_HostWaiting{HostWaiting: &agentv1.HostWaiting{
			ToolCallId: "c1", HostApp: "freecad", Text: "Waiting for a FreeCAD to connect."}}})},
			"Waiting for a FreeCAD to connect.\n"},
		{"no result", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{NoResult: true}}})},
			"✗ no result from the host (timed out or cancelled)\n"},
		{"rolled back", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Result: &hostv1.HostResult{Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT, Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}}}}})},
			"✗ rolled back: NameError: name 'wals' is not defined\n"},
		{"rolled back, the host saying nothing of it", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Result: &hostv1.HostResult{Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}}}}})},
			"✗ rolled back, not verified: the host did not say whether the rollback was exact: NameError: name 'wals' is not defined\n"},
		{"refused before it ran", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Result: &hostv1.HostResult{Error: &hostv1.ExecError{Type: "RevisionChanged", Condition: hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED, Message: "the document changed"}}}}})},
			"✗ not run: RevisionChanged: the document changed\n"},
		{"previewed exactly", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Preview: true, Result: &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT}}}})},
			"✓ previewed and rolled back: nothing was kept\n"},
		{"previewed, rolled back not exactly", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Preview: true, Result: &hostv1.HostResult{Previewed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT, RollbackDifferences: []string{"Line: Placement"}}}}})},
			"✗ previewed, but rolled back not exactly: the document may still hold part of what the script did\n  still differs: Line: Placement\n"},
		{"previewed, the host saying nothing of its rollback", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Preview: true, Result: &hostv1.HostResult{Previewed: true}}}})},
			"✗ previewed and rolled back, not verified: the host did not say whether the rollback was exact\n"},
		{"rolled back, not exactly", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Result: &hostv1.HostResult{Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT, RollbackDifferences: []string{"could not restore ['Wall001']"},
				Error: &hostv1.ExecError{Type: "NameError", Message: "name 'wals' is not defined"}}}}})},
			"✗ rolled back, but not exactly: the document may still hold part of what the script did: NameError: name 'wals' is not defined\n  still differs: could not restore ['Wall001']\n"},
		{"committed, the report's rollback not exact", []*agentv1.StreamChunk{meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{
			Result: &hostv1.HostResult{Committed: true, Rollback: hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT, RollbackDifferences: []string{"could not restore ['Probe']"}}}}})},
			"✓ committed\n✗ the change report's rollback was not exact: the document may hold what the report script did\n  still differs: could not restore ['Probe']\n"},
		{"the host restarted under the script", []*agentv1.StreamChunk{
			meta(&agentv1.Metadata{Kind: &agentv1.Metadata_RunStarted{RunStarted: &agentv1.RunStarted{Model: "m", HostApp: "freecad"}}}),
			meta(&agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{Result: &hostv1.HostResult{Error: &hostv1.ExecError{
				Type: "RuntimeRestarted", Condition: hostv1.ExecCondition_EXEC_CONDITION_RUNTIME_RESTARTED, Message: "killed; the runtime was restarted"}}}}}),
		}, "model m · host FreeCAD\n✗ FreeCAD stopped while the script ran and was restarted: killed; the runtime was restarted\n"},
		{"error", []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{Code: agentv1.ErrorCode_ERROR_CODE_CANCELLED, Message: "stopped"}}}},
			"error (cancelled): stopped\n"},
		{"final message only once", []*agentv1.StreamChunk{
			{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "Done."}}},
			{Chunk: &agentv1.StreamChunk_Complete{Complete: &agentv1.Complete{Text: "Done."}}},
		}, "Done.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewRenderer(&out, false, time.Now)
			for _, c := range tt.chunks {
				r.Chunk(c)
			}
			for _, internal := range []string{"toolu_", "execute_", "c5", "c6"} {
				if strings.Contains(out.String(), internal) {
					t.Errorf("the output shows %q, an internal name", internal)
				}
			}
			if out.String() != tt.want {
				t.Errorf("output\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}

// TestSpinnerShowsElapsedTime drives the spinner with a clock that moves
// 1.5 s per reading, so the figure it prints comes from the clock.
func TestSpinnerShowsElapsedTime(t *testing.T) {
	var out syncBuffer
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	readings := 0
	clock := func() time.Time {
		readings++
		return base.Add(time.Duration(readings-1) * 1500 * time.Millisecond)
	}
	r := NewRenderer(&out, true, clock)
	r.tick = time.Hour // one frame, then only the final line
	done := r.HostWorking("freecad", &agentv1.ToolCall{ToolName: agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW})
	done(nil)
	got := out.String()
	if !strings.Contains(got, "⠋ FreeCAD: rendering a view 1.5s") || !strings.Contains(got, "FreeCAD rendered the view in 3.0s") {
		t.Errorf("spinner output %q", got)
	}
}
