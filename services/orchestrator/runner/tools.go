package runner

import (
	"fmt"
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/tool"
)

// basePrompt is the host-independent part of the system prompt; host idioms
// come from the capability service.
const basePrompt = `You automate a desktop design application for a person, by writing scripts against its API.

How to work:
- Inspect before you act: use execute_data_collection to read the document; never guess names, levels or types.
- Change the document with execute_task_automation. It runs in one transaction that commits or rolls back whole, so a failure leaves the document untouched and it is safe to fix and run again.
- To fix or extend the last script, prefer edits (line-targeted replacements) to resending the whole script.
- After a commit, check the change report and the rendered view against what the person asked for. "It ran" is not "it is right". Either run again to correct it, or answer.
- When a tool result says a budget is spent, stop calling tools and tell the person honestly what was done and what was not.
- Your final message is for the person: say what changed, in a few sentences.`

// phase is what the next turn is expected to do, inferred from session state;
// it sizes the turn's output budget.
type phase string

const (
	phaseInitial            phase = "initial"
	phasePostDataCollection phase = "post_data_collection"
	phaseEdit               phase = "edit"
	phaseVerify             phase = "verify"
	phaseSummary            phase = "summary"
)

// resolvePhase infers the next turn's phase. A spent budget means the model
// should only summarise; a commit means it should only judge the result; a
// held script or fresh data means it is about to write a script.
func resolvePhase(sess *agentv1.Session, capped bool) phase {
	switch {
	case capped:
		return phaseSummary
	case sess.GetLastCompletedTool() == tool.TaskAutomation && sess.GetLastTaskCommitted():
		return phaseVerify
	case sess.GetCurrentScript() != "":
		return phaseEdit
	case sess.GetLastCompletedTool() == tool.DataCollection:
		return phasePostDataCollection
	}
	return phaseInitial
}

// budget returns the output budget of a phase: heavy for turns that write a
// script, light for turns that only decide.
func budget(c call.Limits, p phase) int {
	switch p {
	case phaseVerify, phaseSummary:
		return c.LightMaxTokens
	}
	return c.HeavyMaxTokens
}

// automationBudget names the budget a script was refused by, so the caller
// knows which cap was hit from a value, not from the refusal's wording.
type automationBudget int

const (
	// budgetNone: no cap was hit; the script is charged and runs.
	budgetNone automationBudget = iota
	// budgetFix: the retries after a script that did not commit are spent.
	budgetFix
	// budgetIteration: the runs after a committed script are spent.
	budgetIteration
)

// capText is the tool result of an automation refused by a spent budget. It
// is a normal result, not an error: the run ends through the model.
func capText(fix bool, limit int) string {
	kind := "iteration"
	why := "improvement runs after a committed script"
	if fix {
		kind, why = "fix", "retries after a script that did not commit"
	}
	return fmt.Sprintf("The %s budget is spent (%d %s). This script was not run. "+
		"Do not call execute_task_automation again in this run. Summarise honestly for the person: "+
		"what was done, what is still wrong, and what they could try next.", kind, limit, why)
}

// systemPrompt joins the base prompt and the host's guidance.
func systemPrompt(hostName, guidance string) string {
	var b strings.Builder
	b.WriteString(basePrompt)
	if hostName != "" {
		b.WriteString("\n\nThe host application is " + hostName + ".")
	}
	if g := strings.TrimSpace(guidance); g != "" {
		b.WriteString("\n\n" + g)
	}
	return b.String()
}
