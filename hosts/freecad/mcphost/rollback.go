package mcphost

import (
	"strings"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// rollbackSentence says how a script that raised left the document, exactly
// as the runtime said it: rolled back exactly, not exactly (naming what still
// differs), not verified when the runtime said nothing, or nothing ran when
// the call was refused before it started. A client's model must never read
// "exactly as before" that the host did not say.
func rollbackSentence(res *hostv1.HostResult) string {
	switch c := res.GetError().GetCondition(); c {
	case hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED, hostv1.ExecCondition_EXEC_CONDITION_CALL_ID_REUSED:
		return "The call was refused before anything ran; the document is unchanged."
	}
	switch res.GetRollback() {
	case hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT:
		return "The script raised, so the transaction was rolled back: the document is exactly as before."
	case hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT:
		s := "The script raised and the transaction was rolled back, but not exactly: the document may still hold part of what the script did."
		if d := res.GetRollbackDifferences(); len(d) > 0 {
			s += " What still differs: " + strings.Join(d, "; ") + "."
		}
		return s
	default:
		return "The script raised and the transaction was rolled back; the host did not verify that it left the document as it was, so inspect it."
	}
}
