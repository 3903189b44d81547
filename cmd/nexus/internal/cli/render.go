package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
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
// output is plain text fit for a log. Each script is shown once: a call the
// stream repeats (its preview run, its wait for review, its commit) shows
// only what is new, a fix after a failure shows as a diff of the script that
// failed, and nothing on screen is an internal id or tool name.
type Renderer struct {
	out io.Writer
	tty bool
	now func() time.Time
	// tick is how often the spinner redraws.
	tick time.Duration

	// ViewsDir, when set, is where rendered views are saved; each saved
	// path is printed.
	ViewsDir string

	mu sync.Mutex
	// app is the run's host application.
	app        string
	section    string
	sawMessage bool
	// args and typed are each streaming call's arguments so far and how
	// much of its script is on screen.
	args  map[string]string
	typed map[string]int
	// shown holds the scripts on screen, announced the calls whose line
	// ("→ what it does") is.
	shown     map[string]bool
	announced map[string]bool
	// calls is each call id's script and tool, for its result.
	calls map[string]shownCall
	// failed is the last automation script that failed: the next one is
	// shown as a diff of it.
	failed string
	// previewed is the change report each script's preview printed.
	previewed map[string]string
	// decidedHere are the calls the person decided in this terminal, whose
	// decision the stream's notice need not repeat.
	decidedHere map[string]bool
}

type shownCall struct {
	code string
	tool agentv1.ToolName
}

// NewRenderer returns a renderer writing to out; now is the clock the spinner reads.
func NewRenderer(out io.Writer, tty bool, now func() time.Time) *Renderer {
	return &Renderer{out: out, tty: tty, now: now, tick: 100 * time.Millisecond, args: map[string]string{}, typed: map[string]int{},
		shown: map[string]bool{}, announced: map[string]bool{}, calls: map[string]shownCall{}, previewed: map[string]string{},
		decidedHere: map[string]bool{}}
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
		r.delta(c.GetToolInputDelta())
	case c.GetToolCall() != nil:
		r.toolCall(c.GetToolCall())
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

// delta shows a script as the model types it. Line edits type no script, and
// a fix after a failure is held back to be shown whole as a diff.
func (r *Renderer) delta(d *agentv1.ToolInputDelta) {
	id := d.GetToolCallId()
	r.args[id] += d.GetPartialJson()
	code, whole := PartialString(r.args[id], "code")
	if code == "" || (d.GetToolName() == agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION && r.failed != "") {
		return
	}
	r.enter("script:"+id, "── a script that "+toolWords(d.GetToolName())+" ──")
	if n := r.typed[id]; len(code) > n {
		fmt.Fprint(r.out, r.style(ansiCyan, code[n:]))
		r.typed[id] = len(code)
	}
	if whole {
		// The call may come under another id (its preview run's).
		r.shown[code] = true
	}
}

// toolCall shows a call's script unless it is on screen already, then one
// line saying what it does.
func (r *Renderer) toolCall(tc *agentv1.ToolCall) {
	id, code := tc.GetToolCallId(), tc.GetExecute().GetCode()
	r.calls[id] = shownCall{code: code, tool: tc.GetToolName()}
	if code != "" && !r.shown[code] {
		r.shown[code] = true
		switch {
		case r.typed[id] > 0:
			// Typed live above.
		case tc.GetToolName() == agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION && r.failed != "":
			r.enter("script:"+id, "── the fix: what changed from the script that failed ──")
			for _, l := range hunks(diffLines(r.failed, code)) {
				color := ansiDim
				switch {
				case strings.HasPrefix(l, "+"):
					color = ansiGreen
				case strings.HasPrefix(l, "-"):
					color = ansiRed
				}
				fmt.Fprintln(r.out, r.style(color, l))
			}
		default:
			r.enter("script:"+id, "── a script that "+toolWords(tc.GetToolName())+" ──")
			fmt.Fprint(r.out, r.style(ansiCyan, code))
		}
	}
	key := code
	if key == "" {
		key = id
	}
	if r.announced[key] {
		return
	}
	r.announced[key] = true
	r.enter("call:"+id, "")
	line := "→ " + capitalize(toolWords(tc.GetToolName()))
	if d := tc.GetDescription(); d != "" {
		line = "→ " + d
	}
	fmt.Fprintln(r.out, r.style(ansiBold, line))
	for _, n := range tc.GetMergeNotes() {
		fmt.Fprintln(r.out, "  note: "+n)
	}
	r.section = "call"
}

func (r *Renderer) metadata(m *agentv1.Metadata) {
	switch k := m.GetKind().(type) {
	case *agentv1.Metadata_RunStarted:
		r.app = k.RunStarted.GetHostApp()
		fmt.Fprintln(r.out, r.style(ansiDim, "model "+k.RunStarted.GetModel()+" · host "+hostName(k.RunStarted.GetHostApp())))
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
	case *agentv1.Metadata_ScriptLeft:
		r.enter("notice", "")
		fmt.Fprintln(r.out, r.style(ansiBold, k.ScriptLeft.GetText()))
	case *agentv1.Metadata_ReviewDecided:
		d := k.ReviewDecided
		if r.decidedHere[d.GetToolCallId()] {
			return // This terminal said so when the person answered.
		}
		r.enter("notice", "")
		verb := "approved"
		if d.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
			verb = "declined"
		} else if d.GetEdited() {
			verb = "approved with edits"
		}
		fmt.Fprintln(r.out, r.style(ansiDim, "the script was "+verb+" elsewhere (in the web UI or another terminal)"))
	case *agentv1.Metadata_ToolResult:
		r.enter("result", "")
		r.result(k.ToolResult)
	}
}

// DecidedHere notes that the person decided the call id in this terminal.
func (r *Renderer) DecidedHere(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decidedHere[id] = true
}

// Shown notes a script the terminal printed itself (an edit), so the stream
// does not print it again.
func (r *Renderer) Shown(code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shown[code] = true
}

// onScreen reports whether code and its preview's report were printed.
func (r *Renderer) onScreen(code string) (script, preview bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, preview = r.previewed[code]
	return r.shown[code], preview
}

// toolWords says what a tool does, for a person: "inspects the document".
func toolWords(n agentv1.ToolName) string {
	switch n {
	case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
		return "inspects the document"
	case agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION:
		return "changes the document"
	case agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW:
		return "renders a view of the document"
	}
	return "runs on the host"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// hostName is a host application as its users name it.
func hostName(app string) string {
	switch app {
	case "freecad":
		return "FreeCAD"
	case "revit":
		return "Revit"
	}
	return app
}

// codeText is an error code in lower case, e.g. host_unreachable.
func codeText(c agentv1.ErrorCode) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "ERROR_CODE_"))
}
