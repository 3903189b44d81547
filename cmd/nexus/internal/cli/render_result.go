package cli

// This file is the renderer's side of what the host did: a call's result and
// the indicator while the host works.

import (
	"fmt"
	"strings"
	"sync"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

func (r *Renderer) result(m *agentv1.ToolResult) {
	res := m.GetResult()
	call := r.calls[m.GetToolCallId()]
	preview := m.GetPreview() || res.GetPreviewed()
	// Whether the rollback was exact is the host's own field, not text.
	inexact := res.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT
	exact := res.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT
	switch {
	case m.GetNoResult():
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ no result from the host (timed out or cancelled)"))
	case res.GetError().GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_RUNTIME_RESTARTED:
		// The host process died under the script and came back: the person
		// hears it as that, not as a script error.
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ "+r.hostLabel()+" stopped while the script ran and was restarted: "+res.GetError().GetMessage()))
	case res.GetError() != nil:
		e := res.GetError()
		head := "✗ rolled back"
		switch {
		case inexact:
			head = "✗ rolled back, but not exactly: the document may still hold part of what the script did"
		case e.GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED || e.GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_CALL_ID_REUSED:
			head = "✗ not run" // refused before anything ran (host.proto)
		case !exact:
			head = "✗ rolled back, not verified: the host did not say whether the rollback was exact"
		}
		fmt.Fprintln(r.out, r.style(ansiRed, fmt.Sprintf("%s: %s: %s", head, e.GetType(), e.GetMessage())))
	case preview && inexact:
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ previewed, but rolled back not exactly: the document may still hold part of what the script did"))
	case preview && !exact:
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ previewed and rolled back, not verified: the host did not say whether the rollback was exact"))
	case preview:
		fmt.Fprintln(r.out, r.style(ansiGreen, "✓ previewed and rolled back: nothing was kept"))
	case res.GetCommitted():
		fmt.Fprintln(r.out, r.style(ansiGreen, "✓ committed"))
		switch s := res.GetSave(); s.GetOutcome() {
		case hostv1.SaveOutcome_SAVE_OUTCOME_SAVED:
			fmt.Fprintln(r.out, r.style(ansiGreen, "✓ saved to "+s.GetPath()))
		case hostv1.SaveOutcome_SAVE_OUTCOME_FAILED:
			fmt.Fprintln(r.out, r.style(ansiRed, "✗ not saved: saving to "+s.GetPath()+" failed: "+s.GetError()+" (the change is in the open document only)"))
		}
		if inexact {
			fmt.Fprintln(r.out, r.style(ansiRed, "✗ the change report's rollback was not exact: the document may hold what the report script did"))
		}
	default:
		fmt.Fprintln(r.out, r.style(ansiGreen, "✓ ran read-only"))
	}
	if call.tool == agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION && call.code != "" {
		switch {
		case res.GetError() != nil:
			r.failed = call.code
		case !m.GetNoResult():
			r.failed = ""
		}
	}
	if d := res.GetRollbackDifferences(); inexact && len(d) > 0 {
		fmt.Fprintln(r.out, r.style(ansiRed, "  still differs: "+strings.Join(d, "; ")))
	}
	if out := strings.TrimSpace(res.GetStdout()); out != "" {
		fmt.Fprintln(r.out, indent(out))
	}
	if report := strings.TrimSpace(res.GetEpilogue().GetStdout()); report != "" {
		was, previewed := r.previewed[call.code]
		switch {
		case preview:
			r.previewed[call.code] = report
			fallthrough
		case !previewed || was != report:
			fmt.Fprintln(r.out, r.style(ansiBold, "changes:"))
			fmt.Fprintln(r.out, indent(report))
		default:
			fmt.Fprintln(r.out, r.style(ansiBold, "changes: as the preview reported them above"))
		}
	} else if preview && call.code != "" {
		r.previewed[call.code] = ""
	}
	kind := "view"
	if preview {
		kind = "preview view"
	}
	for _, img := range res.GetImages() {
		label := fmt.Sprintf("%s %s %dx%d", kind, img.GetView(), img.GetWidth(), img.GetHeight())
		if r.ViewsDir == "" {
			fmt.Fprintln(r.out, r.style(ansiDim, fmt.Sprintf("[%s, %d bytes]", label, len(img.GetData()))))
			continue
		}
		path, err := saveView(r.ViewsDir, strings.ReplaceAll(kind, " ", "-"), img)
		if err != nil {
			fmt.Fprintln(r.out, r.style(ansiRed, fmt.Sprintf("[%s not saved: %v]", label, err)))
			continue
		}
		fmt.Fprintln(r.out, r.style(ansiDim, fmt.Sprintf("[%s saved to %s]", label, path)))
	}
	if note := res.GetCaptureNote(); note != "" {
		fmt.Fprintln(r.out, r.style(ansiDim, "["+note+"]"))
	}
}

// hostLabel is the run's host application as its users name it.
func (r *Renderer) hostLabel() string {
	if r.app == "" {
		return "the host"
	}
	return hostName(r.app)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// hostDoing says what the host does for call, while and after.
func hostDoing(call *agentv1.ToolCall) (doing, done string) {
	switch call.GetToolName() {
	case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
		return "inspecting the document", "inspected the document"
	case agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW:
		return "rendering a view", "rendered the view"
	}
	return "running the script", "ran the script"
}

// HostWorking shows that the host is running call and returns a function
// that clears the indicator. On a terminal it is a spinner with the elapsed
// time; otherwise one line.
func (r *Renderer) HostWorking(hostApp string, call *agentv1.ToolCall) func(*hostv1.HostResult) {
	host := hostName(hostApp)
	doing, done := hostDoing(call)
	start := r.now()
	if !r.tty {
		r.mu.Lock()
		fmt.Fprintln(r.out, host+": "+doing+"...")
		r.mu.Unlock()
		return func(*hostv1.HostResult) {}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(r.tick)
		defer t.Stop()
		for i := 0; ; i++ {
			r.mu.Lock()
			fmt.Fprintf(r.out, "%s%c %s: %s %.1fs", clearLine, frames[i%len(frames)], host, doing, r.now().Sub(start).Seconds())
			r.mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func(*hostv1.HostResult) {
		close(stop)
		wg.Wait()
		r.mu.Lock()
		fmt.Fprintf(r.out, "%s%s\n", clearLine, r.style(ansiDim, fmt.Sprintf("%s %s in %.1fs", host, done, r.now().Sub(start).Seconds())))
		r.mu.Unlock()
	}
}
