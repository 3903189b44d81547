package call

// This file renders a host result as the model reads it: duplicate rows
// collapsed, capped, and noted.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/tool"
)

// The notes that tell the model what was done to its copy of a result. A
// silently capped table reads as a complete one.
const (
	noteDedupAndCap = "[Note: duplicate rows removed; output capped for AI processing.]"
	noteDedup       = "[Note: duplicate rows removed from output for AI processing.]"
	noteCap         = "[Note: output capped for AI processing.]"
)

// shapeForModel returns the model's copy of output: runs of identical rows
// collapsed to one first, then capped at maxChars characters, followed by
// exactly one note when anything was done. The user's copy is never shaped.
func shapeForModel(output string, maxChars int) string {
	deduped, didDedup := dedupRows(output)
	capped, didCap := capChars(deduped, maxChars)
	switch {
	case didDedup && didCap:
		return capped + "\n\n" + noteDedupAndCap
	case didDedup:
		return capped + "\n\n" + noteDedup
	case didCap:
		return capped + "\n\n" + noteCap
	}
	return capped
}

// dedupRows collapses runs of identical consecutive non-blank rows. Only
// adjacent repeats go: the same row further down may mean something else
// (a property of the next element).
func dedupRows(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	out := lines[:0:0]
	removed := false
	for i, l := range lines {
		if i > 0 && l == lines[i-1] && strings.TrimSpace(l) != "" {
			removed = true
			continue
		}
		out = append(out, l)
	}
	if !removed {
		return s, false
	}
	return strings.Join(out, "\n"), true
}

// capChars keeps at most max characters, cutting at the last line break in
// the second half of the kept text so no row is cut in two.
func capChars(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	cut := 0
	for i := range s {
		if max == 0 {
			cut = i
			break
		}
		max--
	}
	kept := s[:cut]
	if nl := strings.LastIndexByte(kept, '\n'); nl > len(kept)/2 {
		kept = kept[:nl]
	}
	return kept, true
}

// rollbackInexact says whether the host said it could not put the document
// back exactly, in the result's field of its own.
func rollbackInexact(r *hostv1.HostResult) bool {
	return r.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT
}

// refusedUnrun says whether the host refused the call before running
// anything (host.proto: RevisionChanged, CallIdReused), so there was nothing
// to roll back.
func refusedUnrun(r *hostv1.HostResult) bool {
	c := r.GetError().GetCondition()
	return c == hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED || c == hostv1.ExecCondition_EXEC_CONDITION_CALL_ID_REUSED
}

// writeRollback says how a run that did not commit left the document,
// exactly as the host said it: exact, not exact (and what differs), or not
// verified when the host said nothing of a transaction that ran.
func writeRollback(b *strings.Builder, r *hostv1.HostResult) {
	what := "Transaction rolled back"
	if r.GetPreviewed() {
		what = "Previewed, then rolled back"
	}
	switch {
	case rollbackInexact(r):
		b.WriteString(what + ", but not exactly: the document may still hold part of what this script did. Inspect it before going on.\n")
		writeRollbackDifferences(b, r)
	case r.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT && r.GetRollbackVerified() != "":
		// The host compared part of the document: say what, never more.
		b.WriteString(what + ", " + r.GetRollbackVerified() + ": as it was before this script.\n")
	case r.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT && r.GetPreviewed():
		b.WriteString("Previewed, then rolled back: the document is exactly as it was before this script.\n")
	case r.GetRollback() == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT:
		b.WriteString("Transaction rolled back: the document is exactly as it was before this script.\n")
	case refusedUnrun(r):
		b.WriteString("Nothing ran: the host refused the script before running it, so the document is as it was.\n")
	default:
		b.WriteString(what + ", not verified: the host did not say whether its rollback was exact. Inspect the document before relying on it.\n")
	}
}

// writeRollbackDifferences names what the host said still differs after an
// inexact rollback, when it could name it.
func writeRollbackDifferences(b *strings.Builder, r *hostv1.HostResult) {
	if d := r.GetRollbackDifferences(); len(d) > 0 {
		b.WriteString("What still differs: " + strings.Join(d, "; ") + ".\n")
	}
	if v := r.GetRollbackVerified(); v != "" {
		b.WriteString("What the host compared: " + v + ".\n")
	}
}

// writeHostNotes names what the application did on its own while the
// script ran and the host answered for it (a dialog dismissed).
func writeHostNotes(b *strings.Builder, r *hostv1.HostResult) {
	for _, n := range r.GetHostNotes() {
		b.WriteString("Host note: " + n + ".\n")
	}
}

// writeSave says whether the commit reached the person's file, when the
// host saves to one: a failed save means the work is in the open document
// only, which the model must tell the person.
func writeSave(b *strings.Builder, r *hostv1.HostResult) {
	switch s := r.GetSave(); s.GetOutcome() {
	case hostv1.SaveOutcome_SAVE_OUTCOME_SAVED:
		b.WriteString("Saved to " + s.GetPath() + ".\n")
	case hostv1.SaveOutcome_SAVE_OUTCOME_FAILED:
		b.WriteString("NOT saved: saving to " + s.GetPath() + " failed (" + s.GetError() + "); the change is in the open document only and the file is as before. Tell the person.\n")
	}
}

// renderResult writes the model's copy of a host result: the transaction
// outcome, the script's shaped output, its error, what changed and the
// epilogue's change report, which are the signals the model verifies with.
func renderResult(toolName string, r *hostv1.HostResult, maxChars int) string {
	var b strings.Builder
	switch {
	case toolName == tool.CaptureView:
		if len(r.GetImages()) == 0 {
			b.WriteString("No image came back.")
		} else {
			for _, img := range r.GetImages() {
				fmt.Fprintf(&b, "Rendered view %q (%dx%d) is attached.\n", img.GetView(), img.GetWidth(), img.GetHeight())
			}
		}
	case toolName == tool.DataCollection:
		if r.GetError() != nil {
			b.WriteString("The read-only script failed.\n")
		} else {
			b.WriteString("The read-only script ran.\n")
		}
	case r.GetCommitted():
		b.WriteString("Transaction committed.\n")
		writeSave(&b, r)
		if rollbackInexact(r) {
			b.WriteString("The change report's rollback was not exact: the document may hold what the report script did besides this script's work.\n")
			writeRollbackDifferences(&b, r)
		}
	default:
		writeRollback(&b, r)
	}
	writeHostNotes(&b, r)
	if out := r.GetStdout(); out != "" {
		b.WriteString("\nOutput:\n")
		b.WriteString(shapeForModel(out, maxChars))
		b.WriteString("\n")
	} else if toolName != tool.CaptureView {
		b.WriteString("\nThe script printed nothing.\n")
	}
	if e := r.GetError(); e != nil {
		b.WriteString("\nError: ")
		b.WriteString(e.GetType())
		if e.GetMessage() != "" {
			b.WriteString(": " + e.GetMessage())
		}
		if e.GetLine() > 0 {
			fmt.Fprintf(&b, " (line %d of the script)", e.GetLine())
		}
		b.WriteString("\n")
		if tb := e.GetTraceback(); tb != "" {
			b.WriteString(shapeForModel(tb, maxChars/4))
			b.WriteString("\n")
		}
	}
	if c := r.GetChanges(); c != nil && (len(c.GetAdded())+len(c.GetModified())+len(c.GetDeleted()) > 0) {
		fmt.Fprintf(&b, "\nChanges: %d added, %d modified, %d deleted.\n", len(c.GetAdded()), len(c.GetModified()), len(c.GetDeleted()))
	}
	if ep := r.GetEpilogue(); ep != nil {
		if ep.GetStdout() != "" {
			b.WriteString("\nChange report:\n")
			b.WriteString(shapeForModel(ep.GetStdout(), maxChars/2))
			b.WriteString("\n")
		}
		if e := ep.GetError(); e != nil {
			fmt.Fprintf(&b, "\nThe change report failed: %s: %s\n", e.GetType(), e.GetMessage())
		}
	}
	if n := len(r.GetImages()); n > 0 && toolName != tool.CaptureView {
		fmt.Fprintf(&b, "\n%d rendered view(s) attached.\n", n)
	}
	if note := r.GetCaptureNote(); note != "" {
		b.WriteString("\nNo view: " + note + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
