package mcpserver

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

func outcomeOf(rec *toolCallRecord) ToolCallOutcome {
	o := ToolCallOutcome{}
	if rec.call != nil {
		o.ToolCallID, o.Tool, o.Description = rec.call.GetToolCallId(), toolName(rec.call), rec.call.GetDescription()
	}
	o.Review = rec.review
	res := rec.result
	switch {
	case rec.declined:
		o.Outcome = "declined"
	case rec.none || res == nil:
		o.Outcome = "no_result"
	case res.GetError() != nil:
		o.Outcome = "rolled_back"
		if rec.call.GetExecute().GetMode() == hostv1.Mode_MODE_READ_ONLY {
			o.Outcome = "failed"
		}
		o.Error = res.GetError().GetType() + ": " + res.GetError().GetMessage()
		o.Line = res.GetError().GetLine()
	case res.GetCommitted():
		o.Outcome = "committed"
	case rec.call.GetExportView() != nil:
		o.Outcome = "view"
	default:
		o.Outcome = "read_only"
	}
	return o
}

func describe(o ToolCallOutcome) string {
	s := o.Outcome
	if o.Error != "" {
		s += " (" + o.Error
		if o.Line > 0 {
			s += fmt.Sprintf(", line %d", o.Line)
		}
		s += ")"
	}
	return strings.ReplaceAll(s, "_", " ")
}

// outcomes fills the per-call outcomes, the committed flag and the change
// report of the last committed transaction.
func (r *runFollower) outcomes(out *RunOutput) {
	for _, id := range r.order {
		rec := r.carried[id]
		o := outcomeOf(rec)
		if o.ToolCallID == "" {
			o.ToolCallID = id
		}
		out.ToolCalls = append(out.ToolCalls, o)
		if o.Outcome == "committed" {
			out.Committed = true
			out.ChangeReport = changeReport(rec.result)
		}
	}
	out.Views = len(r.views())
}

// changeReport is the epilogue's report of a committed result, or a list of
// the changed objects when the epilogue did not run.
func changeReport(res *hostv1.HostResult) string {
	ep := res.GetEpilogue()
	if ep.GetStdout() != "" {
		report := ep.GetStdout()
		if ep.GetError() != nil {
			report += "\n(the change report stopped early: " + ep.GetError().GetType() + ": " + ep.GetError().GetMessage() + ")"
		}
		return report
	}
	ch := res.GetChanges()
	return fmt.Sprintf("committed; no change report came back. added: %s; modified: %s; deleted: %s",
		list(ch.GetAdded()), list(ch.GetModified()), list(ch.GetDeleted()))
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// views are the images of the last result that has any: the latest look at
// the document.
func (r *runFollower) views() []*hostv1.Image {
	for i := len(r.order) - 1; i >= 0; i-- {
		if imgs := r.carried[r.order[i]].result.GetImages(); len(imgs) > 0 {
			return imgs
		}
	}
	return nil
}

// result is the tool result the client sees: the final message, the change
// report and the views as image content.
func (r *runFollower) result(out RunOutput) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: out.Error != ""}
	text := out.Message
	if out.Error != "" {
		text = "The run failed: " + out.Error
		if out.Message != "" {
			text += "\n\n" + out.Message
		}
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: text})

	var b strings.Builder
	fmt.Fprintf(&b, "Session %s, run %s.\n", out.SessionID, out.RunID)
	for _, o := range out.ToolCalls {
		fmt.Fprintf(&b, "- %s %s: %s", o.Tool, o.ToolCallID, describe(o))
		if o.Review != "" {
			fmt.Fprintf(&b, " (%s)", o.Review)
		}
		if o.Description != "" {
			fmt.Fprintf(&b, " - %s", o.Description)
		}
		b.WriteString("\n")
	}
	if out.Committed {
		b.WriteString("\nChange report of the last committed transaction:\n" + out.ChangeReport)
	} else {
		b.WriteString("\nNo transaction committed in this run; the document is as it was.")
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: b.String()})
	for _, img := range r.views() {
		res.Content = append(res.Content, &mcp.ImageContent{Data: img.GetData(), MIMEType: img.GetMimeType()})
	}
	if link := r.modelLink(out); link != nil {
		res.Content = append(res.Content, link)
	}
	return res
}

// previewOutcome says what became of a preview, from the host's own fields:
// a preview that failed, or whose rollback the host did not call exact, is
// never told to the person as "rolled back exactly".
func previewOutcome(res *hostv1.HostResult) string {
	if e := res.GetError(); e != nil {
		return fmt.Sprintf("the preview failed (%s: %s)", e.GetType(), clip(e.GetMessage(), 200))
	}
	switch res.GetRollback() {
	case hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT:
		if v := res.GetRollbackVerified(); v != "" {
			// The host compared part of the document: say what, never more.
			return "the preview ran and was rolled back (" + v + ")"
		}
		return "the preview ran and was rolled back exactly"
	case hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT:
		out := "the preview ran and was rolled back, but NOT exactly"
		if d := res.GetRollbackDifferences(); len(d) > 0 {
			out += " (still differs: " + strings.Join(d, ", ") + ")"
		}
		return out
	default:
		return "the preview ran and was rolled back (the host did not say whether exactly)"
	}
}
