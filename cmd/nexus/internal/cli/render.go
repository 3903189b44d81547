package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

const (
	ansiDim   = "\x1b[2m"
	ansiBold  = "\x1b[1m"
	ansiCyan  = "\x1b[36m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiReset = "\x1b[0m"
	clearLine = "\r\x1b[2K"
)

// Renderer prints a run's stream for a person in a terminal. With TTY set it
// styles text and animates a spinner while the host works; without it the
// output is plain text fit for a log.
type Renderer struct {
	out io.Writer
	tty bool
	now func() time.Time
	// tick is how often the spinner redraws.
	tick time.Duration

	// ViewsDir, when set, is where rendered views are saved; each saved
	// path is printed.
	ViewsDir string

	mu         sync.Mutex
	section    string
	sawMessage bool
	args       map[string]string
	printed    map[string]int
}

// NewRenderer returns a renderer writing to out; now is the clock the spinner reads.
func NewRenderer(out io.Writer, tty bool, now func() time.Time) *Renderer {
	return &Renderer{out: out, tty: tty, now: now, tick: 100 * time.Millisecond, args: map[string]string{}, printed: map[string]int{}}
}

func (r *Renderer) style(code, s string) string {
	if !r.tty {
		return s
	}
	return code + s + ansiReset
}

// enter starts a new kind of output on a fresh line with a heading.
func (r *Renderer) enter(section, heading string) {
	if r.section == section {
		return
	}
	if r.section != "" {
		fmt.Fprintln(r.out)
	}
	r.section = section
	if heading != "" {
		fmt.Fprintln(r.out, r.style(ansiBold, heading))
	}
}

// Chunk prints one event of the stream.
func (r *Renderer) Chunk(c *agentv1.StreamChunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case c.GetMetadata() != nil:
		r.metadata(c.GetMetadata())
	case c.GetThinking() != nil:
		r.enter("thinking", "")
		fmt.Fprint(r.out, r.style(ansiDim, c.GetThinking().GetText()))
	case c.GetMessage() != nil:
		r.enter("message", "")
		r.sawMessage = true
		fmt.Fprint(r.out, c.GetMessage().GetText())
	case c.GetToolInputDelta() != nil:
		d := c.GetToolInputDelta()
		id := d.GetToolCallId()
		if r.section != "script:"+id {
			name := toolText(d.GetToolName())
			if name == "" {
				name = "script"
			}
			r.enter("script:"+id, "── "+name+" ──")
		}
		r.args[id] += d.GetPartialJson()
		code, _ := PartialString(r.args[id], "code")
		if n := r.printed[id]; len(code) > n {
			fmt.Fprint(r.out, r.style(ansiCyan, code[n:]))
			r.printed[id] = len(code)
		}
	case c.GetToolCall() != nil:
		tc := c.GetToolCall()
		if _, typed := r.printed[tc.GetToolCallId()]; !typed {
			if code := tc.GetExecute().GetCode(); code != "" {
				// Line edits stream no script; the merged one is what runs.
				r.enter("script:"+tc.GetToolCallId(), "── "+toolText(tc.GetToolName())+" (merged script) ──")
				fmt.Fprint(r.out, r.style(ansiCyan, code))
			}
		}
		r.enter("call:"+tc.GetToolCallId(), "")
		line := "→ " + toolText(tc.GetToolName())
		if d := tc.GetDescription(); d != "" {
			line += ": " + d
		}
		fmt.Fprintln(r.out, r.style(ansiBold, line))
		for _, n := range tc.GetMergeNotes() {
			fmt.Fprintln(r.out, "  note: "+n)
		}
		r.section = "call"
	case c.GetComplete() != nil:
		r.enter("end", "")
		if !r.sawMessage && c.GetComplete().GetText() != "" {
			fmt.Fprintln(r.out, c.GetComplete().GetText())
		}
	case c.GetError() != nil:
		e := c.GetError()
		r.enter("end", "")
		fmt.Fprintln(r.out, r.style(ansiRed, "error ("+codeText(e.GetCode())+"): "+e.GetMessage()))
	case c.GetUsage() != nil:
		u := c.GetUsage()
		if !u.GetFinal() {
			return
		}
		r.enter("usage", "")
		t := u.GetTotal()
		fmt.Fprintln(r.out, r.style(ansiDim, fmt.Sprintf("%s · %d turns · %d in / %d out tokens (%d cached) · $%.4f",
			u.GetModel(), u.GetTurns(), t.GetInputTokens(), t.GetOutputTokens(), t.GetCacheReadTokens(), t.GetCostUsd())))
	}
}

func (r *Renderer) metadata(m *agentv1.Metadata) {
	switch k := m.GetKind().(type) {
	case *agentv1.Metadata_RunStarted:
		fmt.Fprintln(r.out, r.style(ansiDim, "model "+k.RunStarted.GetModel()+" · host "+k.RunStarted.GetHostApp()))
	case *agentv1.Metadata_ContextSummarized:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiDim, "── context summarized ──"))
	case *agentv1.Metadata_TurnRetried:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiDim, "── "+k.TurnRetried.GetText()+" ──"))
	case *agentv1.Metadata_TurnRestarted:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiDim, "── "+k.TurnRestarted.GetText()+" ──"))
	case *agentv1.Metadata_Notice:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiDim, k.Notice.GetText()))
	case *agentv1.Metadata_HostWaiting:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiDim, k.HostWaiting.GetText()))
	case *agentv1.Metadata_ReviewDecided:
		r.enter("notice", "")
		d := k.ReviewDecided
		verb := "approved"
		if d.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
			verb = "declined"
		} else if d.GetEdited() {
			verb = "approved with edits"
		}
		who := ""
		if d.GetReviewer() != "" {
			who = " by " + d.GetReviewer()
		}
		fmt.Fprintln(r.out, r.style(ansiDim, fmt.Sprintf("review: %s %s%s", d.GetToolCallId(), verb, who)))
	case *agentv1.Metadata_ToolResult:
		r.enter("result", "")
		r.result(k.ToolResult)
	}
}

// toolText is a tool's name as the model knows it, e.g. execute_task_automation.
func toolText(n agentv1.ToolName) string {
	if n == agentv1.ToolName_TOOL_NAME_UNSPECIFIED {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(n.String(), "TOOL_NAME_"))
}

// codeText is an error code in lower case, e.g. host_unreachable.
func codeText(c agentv1.ErrorCode) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "ERROR_CODE_"))
}

func (r *Renderer) result(m *agentv1.ToolResult) {
	res := m.GetResult()
	// Whether the rollback was exact is the host's own field, not text.
	inexact := res.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT
	exact := res.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT
	switch {
	case m.GetNoResult():
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ no result from the host (timed out or cancelled)"))
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
	case (m.GetPreview() || res.GetPreviewed()) && inexact:
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ previewed, but rolled back not exactly: the document may still hold part of what the script did"))
	case (m.GetPreview() || res.GetPreviewed()) && !exact:
		fmt.Fprintln(r.out, r.style(ansiRed, "✗ previewed and rolled back, not verified: the host did not say whether the rollback was exact"))
	case m.GetPreview() || res.GetPreviewed():
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
	if d := res.GetRollbackDifferences(); inexact && len(d) > 0 {
		fmt.Fprintln(r.out, r.style(ansiRed, "  still differs: "+strings.Join(d, "; ")))
	}
	if out := strings.TrimSpace(res.GetStdout()); out != "" {
		fmt.Fprintln(r.out, indent(out))
	}
	if report := strings.TrimSpace(res.GetEpilogue().GetStdout()); report != "" {
		fmt.Fprintln(r.out, r.style(ansiBold, "changes:"))
		fmt.Fprintln(r.out, indent(report))
	}
	for i, img := range res.GetImages() {
		label := fmt.Sprintf("view %s %dx%d", img.GetView(), img.GetWidth(), img.GetHeight())
		if r.ViewsDir == "" {
			fmt.Fprintln(r.out, r.style(ansiDim, fmt.Sprintf("[%s, %d bytes]", label, len(img.GetData()))))
			continue
		}
		path, err := saveView(r.ViewsDir, m.GetToolCallId(), i+1, img)
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

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// HostWorking shows that the host is running call and returns a function
// that clears the indicator. On a terminal it is a spinner with the elapsed
// time; otherwise one line.
func (r *Renderer) HostWorking(hostApp string, call *agentv1.ToolCall) func(*hostv1.HostResult) {
	label := hostApp + " is running " + toolText(call.GetToolName())
	start := r.now()
	if !r.tty {
		r.mu.Lock()
		fmt.Fprintln(r.out, label+"...")
		r.mu.Unlock()
		return func(*hostv1.HostResult) {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(r.tick)
		defer t.Stop()
		for i := 0; ; i++ {
			r.mu.Lock()
			fmt.Fprintf(r.out, "%s%c %s %.1fs", clearLine, frames[i%len(frames)], label, r.now().Sub(start).Seconds())
			r.mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func(*hostv1.HostResult) {
		close(done)
		wg.Wait()
		r.mu.Lock()
		fmt.Fprintf(r.out, "%s%s %s (%.1fs)\n", clearLine, r.style(ansiDim, "host done:"), label, r.now().Sub(start).Seconds())
		r.mu.Unlock()
	}
}
