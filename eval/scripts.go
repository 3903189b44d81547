package eval

import (
	"fmt"
	"strconv"
	"strings"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// PassMarker is the line a checker prints after its last assertion held.
const PassMarker = "EVAL CHECK PASSED"

// ClearCode empties the active document, so every task starts from nothing
// but its own setup. Objects go users first: removing one another object
// still uses would leave that one broken for a moment.
const ClearCode = `for _ in range(len(doc.Objects) + 1):
    free = [o for o in doc.Objects if not o.InList]
    if not free:
        break
    for o in free:
        doc.removeObject(o.Name)
for o in list(doc.Objects):
    doc.removeObject(o.Name)
print("cleared; %d objects left" % len(doc.Objects))
`

// SetupCode is the script that builds the task's starting document (on an
// empty one), or "" when the task starts empty.
func (t Task) SetupCode() string {
	if strings.TrimSpace(t.setup) == "" {
		return ""
	}
	return t.lib + "\n# --- setup of " + t.ID + " ---\n" + t.setup
}

// CheckCode is the read-only checker, given the final message answer.
func (t Task) CheckCode(answer string) string {
	return t.lib + "\n# --- check of " + t.ID + " ---\nANSWER = " + pyString(answer) + "\n" + t.check + "\nprint(" + pyString(PassMarker) + ")\n"
}

// ScriptMode is how a solution's scripts run: inspections only read.
func (t Task) ScriptMode() hostv1.Mode {
	if t.Kind == KindInspect {
		return hostv1.Mode_MODE_READ_ONLY
	}
	return hostv1.Mode_MODE_TRANSACTION
}

// pyString quotes s as a Python string literal; strconv.Quote's escapes
// are all valid Python for printable text, and \u escapes cover the rest.
func pyString(s string) string { return strconv.QuoteToASCII(s) }

// Verdict reads a checker's result: passed, or why not (the checker's own
// message when an assertion failed).
func Verdict(res *hostv1.HostResult) (bool, string) {
	if e := res.GetError(); e != nil {
		msg := e.GetMessage()
		if e.GetType() != "CheckFailed" {
			msg = fmt.Sprintf("%s: %s", e.GetType(), msg)
		}
		return false, msg
	}
	if !strings.Contains(res.GetStdout(), PassMarker) {
		return false, "the checker ended without saying it passed"
	}
	return true, ""
}
