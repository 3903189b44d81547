package cli

// This file is the terminal's side of a review: showing a script or its preview,
// reading the person's decision or edit, and sending it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// review shows a call awaiting review and asks the person for a decision,
// until they answer or the call is decided elsewhere or the run ends; done
// says the loop is over.
func (f *follower) review(ctx context.Context, call *agentv1.ToolCall) (done bool, err error) {
	w := f.o.Stdout
	if f.r == nil {
		w = f.o.Stderr // stdout carries JSON only
	}
	id := call.GetToolCallId()
	f.showReview(w, call)
	if f.lines == nil {
		return true, fmt.Errorf("run: a script awaits review (the session's policy) and stdin is not a terminal to ask on: "+
			"pass --yes (or --review none) for unattended runs, or run nexus run in a terminal; "+
			"the run waits in session %s, where the web UI can review it (nexus cancel %s stops it)", f.session, f.session)
	}
	for {
		fmt.Fprint(w, "[a]pprove, [d]ecline, [e]dit in $EDITOR? ")
		select {
		case rv := <-f.chunks:
			if settled(rv, id) {
				// The run ended (its end says how), or another client
				// decided the call (the stream's notice says so).
				fmt.Fprintln(w)
				return f.handle(ctx, rv)
			}
			fmt.Fprintln(w)
			if done, err := f.handle(ctx, rv); done {
				return true, err
			}
		case line := <-f.lines.next():
			f.lines.taken()
			if line.err != nil && line.text == "" {
				return true, fmt.Errorf("run: no decision for the script: stdin closed (%v); the run waits in session %s", line.err, f.session)
			}
			req := &agentv1.ReviewToolCallRequest{SessionId: f.session, ToolCallId: id}
			switch strings.ToLower(strings.TrimSpace(line.text)) {
			case "a", "approve", "y", "yes":
				req.Verdict = agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE
			case "d", "decline", "n", "no":
				req.Verdict = agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE
				req.Reason = "the person declined it in the terminal"
			case "e", "edit":
				code, err := f.edit(call)
				if err != nil {
					fmt.Fprintf(w, "edit: %v\n", err)
					continue
				}
				req.Verdict, req.Code = agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE, code
				fmt.Fprintf(w, "── your edited script ──\n%s\n", code)
				if f.r != nil {
					f.r.Shown(code)
				}
			default:
				fmt.Fprintln(w, "answer a, d or e")
				continue
			}
			_, err := f.b.ReviewToolCall(ctx, req)
			if isConflict(err) {
				fmt.Fprintf(w, "the script was decided elsewhere first: %v\n", err)
				return false, nil
			}
			if err != nil {
				return true, err
			}
			if f.r != nil {
				f.r.DecidedHere(id)
			}
			fmt.Fprintln(w, decisionLine(req, call))
			return false, nil
		}
	}
}

// decisionLine is the one line that says what the person's answer does.
func decisionLine(req *agentv1.ReviewToolCallRequest, call *agentv1.ToolCall) string {
	switch {
	case req.GetVerdict() == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE:
		return "✗ declined: the script does not run, and the model is told"
	case req.GetCode() != "" && call.GetPreview() != nil:
		// The edit was not what the preview showed: it gets a preview and
		// a decision of its own.
		return "✎ your edit runs as a preview first and then waits for your decision; nothing commits yet"
	case req.GetCode() != "":
		return "✓ approved with your edit: it runs now"
	case call.GetPreview() != nil:
		return "✓ approved: the previewed script commits now"
	}
	return "✓ approved: the script runs now"
}

// settled reports a chunk that settles the call id: the end of the run, its
// decision, or the call streamed again.
func settled(rv received, id string) bool {
	c := rv.c
	switch {
	case rv.err != nil, c.GetError() != nil, c.GetComplete() != nil:
		return true
	case c.GetMetadata().GetReviewDecided().GetToolCallId() == id:
		return true
	case c.GetToolCall().GetToolCallId() == id && c.GetToolCall().GetReview() != agentv1.ReviewState_REVIEW_STATE_AWAITING:
		return true
	}
	return false
}

// showReview prints what the person decides on: the script and, under the
// preview policy, what it did before it was rolled back. What the stream
// already put on screen is named, not printed again.
func (f *follower) showReview(w io.Writer, call *agentv1.ToolCall) {
	code := call.GetExecute().GetCode()
	script, preview := false, false
	if f.r != nil {
		script, preview = f.r.onScreen(code)
	}
	fmt.Fprintf(w, "\n── this script awaits your review: it %s ──\n", toolWords(call.GetToolName()))
	if d := call.GetDescription(); d != "" {
		fmt.Fprintln(w, d)
	}
	if script {
		fmt.Fprintln(w, "(the script is shown above)")
	} else {
		fmt.Fprintln(w, strings.TrimRight(code, "\n"))
	}
	p := call.GetPreview()
	if p == nil {
		return
	}
	fmt.Fprintln(w, "── preview (ran on the document, then rolled back) ──")
	if e := p.GetError(); e != nil {
		fmt.Fprintf(w, "the preview failed: %s: %s\n", e.GetType(), e.GetMessage())
	}
	if preview {
		fmt.Fprintln(w, "(its change report and view are shown above)")
		return
	}
	if out := strings.TrimSpace(p.GetEpilogue().GetStdout()); out != "" {
		fmt.Fprintln(w, "changes:")
		fmt.Fprintln(w, indent(out))
	}
	if rep := p.GetEpilogue().GetReport(); rep != nil && (len(rep.GetElements()) > 0 || len(rep.GetHelpers()) > 0) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CHANGE\tCATEGORY\tTYPE\tLABEL\tLEVEL\tID")
		for _, e := range rep.GetElements() {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", enumText(e.GetChange().String(), "CHANGE_KIND_"), e.GetCategory(), e.GetType(), e.GetLabel(), e.GetLevel(), e.GetName())
		}
		for _, h := range rep.GetHelpers() {
			fmt.Fprintf(tw, "  %s\t%s ×%d\t\t\t\t\n", enumText(h.GetChange().String(), "CHANGE_KIND_"), h.GetKind(), h.GetCount())
		}
		_ = tw.Flush()
	}
	for _, img := range p.GetImages() {
		label := fmt.Sprintf("preview view %s %dx%d", img.GetView(), img.GetWidth(), img.GetHeight())
		dir := ""
		if f.r != nil {
			dir = f.r.ViewsDir
		}
		if dir == "" {
			fmt.Fprintf(w, "[%s, %d bytes]\n", label, len(img.GetData()))
			continue
		}
		path, err := saveView(dir, "preview-view", img)
		if err != nil {
			fmt.Fprintf(w, "[%s not saved: %v]\n", label, err)
			continue
		}
		fmt.Fprintf(w, "[%s saved to %s]\n", label, path)
	}
}

// edit opens the script in $VISUAL or $EDITOR and answers what was saved.
func (f *follower) edit(call *agentv1.ToolCall) (string, error) {
	editor := f.o.lookup("VISUAL", f.o.lookup("EDITOR", "vi"))
	tmp, err := os.CreateTemp("", "nexus-review-*.py")
	if err != nil {
		return "", fmt.Errorf("temporary file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(call.GetExecute().GetCode())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("write %s: %w", tmp.Name(), werr)
	}
	// Through the shell, so EDITOR may carry arguments ("code --wait").
	cmd := exec.Command("/bin/sh", "-c", editor+` "$1"`, "nexus-editor", tmp.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f.o.Stdin, f.o.Stdout, f.o.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w (the script was not approved)", editor, err)
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return "", fmt.Errorf("read the edited script: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", errors.New("the edited script is empty (the script was not approved)")
	}
	return string(b), nil
}

// lineReader reads the person's answers. At most one read is in flight: a
// prompt abandoned because the call was decided elsewhere leaves its read
// for the next prompt, so no reader competes with $EDITOR for the terminal.
type lineReader struct {
	r       *bufio.Reader
	pending chan lineResult
}

type lineResult struct {
	text string
	err  error
}

func (l *lineReader) next() <-chan lineResult {
	if l.pending == nil {
		ch := make(chan lineResult, 1)
		l.pending = ch
		go func() {
			s, err := l.r.ReadString('\n')
			ch <- lineResult{s, err}
		}()
	}
	return l.pending
}

// taken marks the pending read's answer as used.
func (l *lineReader) taken() { l.pending = nil }
