package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Bounds of what one review question shows, so a long script or report
// still makes a question a client can display.
const (
	reviewReportChars = 6000
	reviewScriptChars = 8000
)

// elicits reports whether the client of req said, when it connected, that it
// can put questions to its person (MCP elicitation).
func elicits(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// awaitReview handles a call that waits for the person's decision. A client
// that can ask its person gets the question (the preview's change report, a
// description of its view, and the script) and the answer is recorded as the
// review; otherwise, or when the person dismisses the question, the progress
// says where the review can be given, and the run waits for it there.
func (r *runFollower) awaitReview(ctx context.Context, tc *agentv1.ToolCall, name, desc string) error {
	where := fmt.Sprintf("in the Nexus web UI, with `nexus run`, or by POST /v1/sessions/%s/tool-calls/%s:review", r.sessionID, tc.GetToolCallId())
	waiting := fmt.Sprintf("%s: %s; session %s, tool call %s: the script awaits your review %s; the run waits for it",
		name, desc, r.sessionID, tc.GetToolCallId(), where)
	if !r.elicit {
		r.p.say(waiting)
		return nil
	}
	r.p.say(fmt.Sprintf("%s: %s; asking you to approve or decline the script", name, desc))
	res, err := r.req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: reviewQuestion(r.sessionID, tc, desc),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"reason": map[string]any{"type": "string", "title": "Reason", "description": "Optional: why, when you decline (the model is told)."},
			},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ask for the review of %s: %w", tc.GetToolCallId(), context.Cause(ctx))
		}
		r.cfg.Log.Warn("ask the mcp client for a review", "session", r.sessionID, "tool_call", tc.GetToolCallId(), "err", err)
		r.p.say(fmt.Sprintf("the MCP client could not ask you (%v); %s", err, strings.TrimPrefix(waiting, name+": "+desc+"; ")))
		return nil
	}
	review := &agentv1.ReviewToolCallRequest{SessionId: r.sessionID, ToolCallId: tc.GetToolCallId()}
	switch res.Action {
	case "accept":
		review.Verdict = agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE
	case "decline":
		review.Verdict = agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE
		review.Reason, _ = res.Content["reason"].(string)
		if strings.TrimSpace(review.Reason) == "" {
			review.Reason = "the person declined it in their MCP client"
		}
	default:
		r.p.say("you dismissed the question; " + strings.TrimPrefix(waiting, name+": "+desc+"; "))
		return nil
	}
	if review.Verdict == agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE {
		r.record(tc.GetToolCallId()).reason = review.Reason
	}
	if _, err := r.cfg.Orchestrator.ReviewToolCall(ctx, review); err != nil {
		// Someone may have decided first (the web UI, say); the run's stream
		// says what was decided.
		r.p.say(fmt.Sprintf("your answer for %s was not recorded: %s", tc.GetToolCallId(), status.Convert(err).Message()))
	}
	return nil
}

// reviewQuestion is what the person is asked: what the script did in its
// preview (run, reported, rendered, then rolled back, and whether exactly)
// and the script itself.
func reviewQuestion(sessionID string, tc *agentv1.ToolCall, desc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Nexus wants to commit a script to the %s document (session %s, tool call %s): %s\n\n", tc.GetHostApp(), sessionID, tc.GetToolCallId(), desc)
	if pr := tc.GetPreview(); pr != nil {
		b.WriteString(previewOutcome(pr) + "; nothing is kept until you approve.\n")
		report := pr.GetEpilogue().GetStdout()
		if report == "" {
			ch := pr.GetChanges()
			report = fmt.Sprintf("added: %s; modified: %s; deleted: %s", list(ch.GetAdded()), list(ch.GetModified()), list(ch.GetDeleted()))
		}
		b.WriteString("\nWhat it would change:\n" + clip(report, reviewReportChars) + "\n")
		for _, img := range pr.GetImages() {
			fmt.Fprintf(&b, "\nView: a %dx%d %s render of the %s view", img.GetWidth(), img.GetHeight(), img.GetMimeType(), img.GetView())
			if f := img.GetFramed(); f != "" {
				fmt.Fprintf(&b, ", framing %s", f)
			}
			b.WriteString(" (the Nexus web UI shows it).\n")
		}
		if note := pr.GetCaptureNote(); note != "" {
			b.WriteString("\nView: " + note + "\n")
		}
	} else {
		b.WriteString("It has not run yet.\n")
	}
	fmt.Fprintf(&b, "\nThe script:\n%s\n\nAccept to commit exactly this script; decline to refuse it (the model is told, with your reason).",
		clip(tc.GetExecute().GetCode(), reviewScriptChars))
	return b.String()
}

// clip bounds s to n bytes, saying how much was left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.ToValidUTF8(s[:n], "")
	return cut + fmt.Sprintf("\n[... %d more bytes: the Nexus web UI shows all of it]", len(s)-len(cut))
}
