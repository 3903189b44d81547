package orchestrator

import (
	"fmt"
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// Tool names are part of the product's contract: transcripts, the UI and
// the audit log all name them.
const (
	toolDataCollection = "execute_data_collection"
	toolTaskAutomation = "execute_task_automation"
	toolCaptureView    = "capture_view"
)

// toolSpecs returns the tools the model sees, declared once; the model-router
// translates them into each vendor's dialect.
func toolSpecs() []*modelv1.ToolSpec {
	return []*modelv1.ToolSpec{
		{
			Name: toolDataCollection,
			Description: "Run a read-only script in the open document of the host application and get back what it prints. " +
				"Use it to inspect the document before changing it: names, levels, types, counts. It cannot change anything.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"code":{"type":"string","description":"The script. Print what you need to see."},` +
				`"description":{"type":"string","description":"One sentence saying what the script looks up."}},` +
				`"required":["code","description"],"additionalProperties":false}`,
		},
		{
			Name: toolTaskAutomation,
			Description: "Run a script that changes the document inside one transaction: it commits whole or rolls back whole. " +
				"Send either the whole script in code, or edits: line-targeted replacements applied to the last script you sent. " +
				"After a commit you get the script's output, a change report of what actually changed, and usually a rendered view. " +
				"After a rollback the document is exactly as before and you get the error.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"description":{"type":"string","description":"One sentence saying what the script changes."},` +
				`"code":{"type":"string","description":"The whole script. Leave out when sending edits."},` +
				`"edits":{"type":"array","description":"Replacements applied to the last script, bottom-up. Line numbers refer to that script before any edit. end_line = start_line - 1 inserts before start_line; empty new_text deletes.",` +
				`"items":{"type":"object","properties":{` +
				`"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":0},"new_text":{"type":"string"}},` +
				`"required":["start_line","end_line","new_text"],"additionalProperties":false}}},` +
				`"required":["description"],"additionalProperties":false}`,
		},
		{
			Name:        toolCaptureView,
			Description: "Get a rendered image of a view of the document, to look at the result of your work.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"view":{"type":"string","description":"The view, e.g. \"isometric\" or \"plan\"; leave out for the host's default."}},` +
				`"additionalProperties":false}`,
		},
	}
}

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
	case sess.GetLastCompletedTool() == toolTaskAutomation && sess.GetLastTaskCommitted():
		return phaseVerify
	case sess.GetCurrentScript() != "":
		return phaseEdit
	case sess.GetLastCompletedTool() == toolDataCollection:
		return phasePostDataCollection
	}
	return phaseInitial
}

// budget returns the output budget of a phase: heavy for turns that write a
// script, light for turns that only decide.
func (c Config) budget(p phase) int {
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

// noResultText tells the model that nothing came back: timeout and cancel
// are one path.
func noResultText(timeout string) string {
	return "No result: the host did not answer within " + timeout + ", or the run was cancelled. " +
		"It is unknown whether the script ran; inspect the document before changing it again."
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
