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
		}, "── execute_task_automation ──\na = 1\nb = 2\n→ execute_task_automation\n"},
		{"line edits show the merged script", []*agentv1.StreamChunk{
			delta("c2", `{"edits":[{"start_line":2,"end_line":2,"new_text":"b = 3"}]}`), call("c2", "a = 1\nb = 3"),
		}, "── execute_task_automation ──\na = 1\nb = 3\n→ execute_task_automation\n"},
		{"a call without a typed script shows it", []*agentv1.StreamChunk{call("c3", "x = 1\n")},
			"── execute_task_automation (merged script) ──\nx = 1\n\n→ execute_task_automation\n"},
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
	if !strings.Contains(got, "⠋ freecad is running capture_view 1.5s") || !strings.Contains(got, "freecad is running capture_view (3.0s)\n") {
		t.Errorf("spinner output %q", got)
	}
}
