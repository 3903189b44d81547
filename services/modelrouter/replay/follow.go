package replay

import (
	"fmt"
	"strings"
)

// The steps a recorded turn can be played at. A conversation that goes well
// meets them in this order; which one comes next is decided from the tool
// results after the latest prompt, never from how many there are, so a
// cancelled run, a declined script or a document that already holds the work
// cannot shift the recording.
const (
	stepInspect  = "inspect"
	stepAutomate = "automate"
	stepFix      = "fix"
	stepVerify   = "verify"
	stepSummary  = "summary"
	stepNames    = "inspect, automate, fix, verify, summary"
)

func isStep(s string) bool {
	switch s {
	case stepInspect, stepAutomate, stepFix, stepVerify, stepSummary:
		return true
	}
	return false
}

// The tools whose results move a script on; results of any other tool (a
// rendered view) only matter after a commit.
const (
	toolInspect  = "execute_data_collection"
	toolAutomate = "execute_task_automation"
)

// How the orchestrator words what it adds to a transcript. The replay reads
// them as a model would; the texts live in services/orchestrator (compact.go
// summaryPrompt, shape.go renderResult, tools.go noResultText and capText,
// turn.go and decide.go, where a stopped run answers its calls) and services/modelrouter (prepare.go
// compactionText), and a reviewer's decline (services/orchestrator/call review.go) is the error type "Declined".
const (
	markSummaryRequest = "Write only the summary; call no tool."
	markSummary        = "Summary of the earlier conversation:"
	markCommitted      = "Transaction committed."
	markDeclined       = "Error: Declined"
	markNoResult       = "No result:"
	markNotRun         = "Not run:"
	markBudget         = "budget is spent"
	markError          = "Error: "
)

// script finds the recorded script of the conversation's prompt, or of the
// prompt a compaction summary quotes.
func (c *Cassette) script(conv conversation) *Script {
	for i := range c.Scripts {
		s := &c.Scripts[i]
		for _, n := range append([]string{s.Prompt}, s.Aliases...) {
			switch {
			case conv.prompt != "" && normalize(n) == normalize(conv.prompt):
				return s
			case conv.prompt == "" && conv.summary != "" && strings.Contains(normalize(conv.summary), normalize(n)):
				return s
			}
		}
	}
	return nil
}

// turn returns the recorded turn of a step.
func (s *Script) turn(step string) (Turn, bool) {
	for _, t := range s.Turns {
		if t.Step == step {
			return t, true
		}
	}
	return Turn{}, false
}

func (s *Script) subject() string {
	if s.Subject == "" {
		return "result"
	}
	return s.Subject
}

// next is the turn that answers the conversation.
func (c *Cassette) next(conv conversation) Turn {
	s := c.script(conv)
	if s == nil {
		return c.fallbackTurn()
	}
	p := s.progress(conv.after)
	if conv.summaryRequest {
		prompt := conv.prompt
		if prompt == "" {
			prompt = s.Prompt
		}
		return said(fmt.Sprintf("The person's prompt: %q\n%s", prompt, p.status))
	}
	if p.step != "" {
		if t, ok := s.turn(p.step); ok {
			return t
		}
	}
	return said(p.answer)
}

// said is a turn the replay writes itself: prose, no tool call.
func said(text string) Turn {
	return Turn{Content: []Block{{Type: "text", Text: text}}, StopReason: "end_turn", Usage: Usage{InputTokens: 100, OutputTokens: int64(len(text) / 4)}}
}

// progress is where a script stands: the recorded step to play next, or the
// answer that ends the turn when the conversation left the recording, and
// a status for a summary.
type progress struct {
	step, answer, status string
}

// progress decides from the answered calls after the prompt. The latest
// inspection or automation decides; a commit followed by any other answered
// call (a rendered view) means it was verified.
func (s *Script) progress(after []*call) progress {
	var last *call
	automations, committedAt, verified := 0, -1, false
	for i, k := range after {
		if !k.answered {
			continue
		}
		switch k.name {
		case toolInspect:
			last = k
		case toolAutomate:
			last = k
			automations++
			if committed(k) {
				committedAt, verified = i, false
			}
		default:
			verified = verified || committedAt >= 0
		}
	}
	subj := s.subject()
	if last == nil {
		return progress{step: stepInspect, status: "Nothing has been done yet: the document has not been inspected."}
	}
	if last.name == toolInspect {
		return s.afterInspection(last)
	}
	switch {
	case strings.Contains(last.result, markDeclined):
		a := fmt.Sprintf("You declined the script, so it did not run and nothing in the document was changed; no %s was added. "+
			"Run the prompt again to see the script once more.", subj)
		return progress{answer: a, status: a}
	case strings.Contains(last.result, markBudget):
		a := firstSentence(last.result) + " The last script was not run."
		if committedAt < 0 {
			a += fmt.Sprintf(" Nothing was committed: the document is as it was before this run, and no %s was added.", subj)
		} else {
			a += " An earlier script of this run did commit; check the document before running the prompt again."
		}
		return progress{answer: a, status: a}
	case noResult(last):
		a := "No result came back from the host (it did not answer in time, or the run was cancelled), so I can't tell whether anything changed in the document. " +
			"Inspect the document before running the prompt again."
		return progress{answer: a, status: a}
	case committed(last):
		status := fmt.Sprintf("The script that makes the %s committed; what is left is to check the result and report it.", subj)
		if _, ok := s.turn(stepVerify); ok && !verified {
			return progress{step: stepVerify, status: status}
		}
		return progress{step: stepSummary, status: status}
	}
	quoted := errorOf(last.result)
	if fix, ok := s.turn(stepFix); ok && automations == 1 && strings.Contains(last.result, fix.AfterError) {
		return progress{step: stepFix, status: fmt.Sprintf("The first script failed with %s and was rolled back: the document is unchanged and the %s has not been made yet; "+
			"the script needs that one mistake fixed.", quoted, subj)}
	}
	a := fmt.Sprintf("The script failed: %s. The transaction was rolled back, so the document is exactly as it was before and no %s was added. "+
		"The demo has no recorded fix for this error, so it stops here.", quoted, subj)
	return progress{answer: a, status: a}
}

// afterInspection decides after the listing: go on only when nothing in the
// document is in the way.
func (s *Script) afterInspection(k *call) progress {
	subj := s.subject()
	var a string
	switch found := s.conflicts(k.result); {
	case noResult(k):
		a = "No result came back from the host for the inspection, so I don't know what the document holds. " +
			"The inspection only reads, so nothing was changed; run the prompt again once the host answers."
	case k.isError:
		a = fmt.Sprintf("The inspection of the document failed: %s. Without the listing I can't tell whether the document already holds a %s, "+
			"so nothing was changed.", errorOf(k.result), subj)
	case len(found) > 0:
		a = fmt.Sprintf("The document already holds a %s: the listing shows %s. This demo only makes a %s in an empty document, "+
			"so I did not run its script and nothing in the document was changed. Open an empty document, or remove those objects, and run the prompt again.",
			subj, joinNames(found), subj)
	default:
		return progress{step: stepAutomate, status: fmt.Sprintf("The document was inspected and nothing in it is in the way; the %s has not been made yet.", subj)}
	}
	return progress{answer: a, status: a}
}

// conflicts lists the objects of an inspection listing whose name, type or
// label holds one of the script's conflict words. A listing row is what the
// demo's inspection prints: "- Name (TypeId) label='Label'".
func (s *Script) conflicts(listing string) []string {
	var found []string
	for _, line := range strings.Split(listing, "\n") {
		row, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(row, " (")
		if !ok {
			continue
		}
		typ, label, ok := strings.Cut(rest, ") label=")
		if !ok {
			continue
		}
		label = strings.Trim(label, `'"`)
		all := strings.ToLower(name + " " + typ + " " + label)
		for _, w := range s.Conflicts {
			if w != "" && strings.Contains(all, strings.ToLower(w)) {
				found = append(found, fmt.Sprintf("%s (%s, label %q)", name, typ, label))
				break
			}
		}
	}
	return found
}

// joinNames lists up to six names in prose.
func joinNames(names []string) string {
	const most = 6
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// noResult says the host gave no answer, or the call never left.
func noResult(k *call) bool {
	t := strings.TrimSpace(k.result)
	return strings.HasPrefix(t, markNoResult) || strings.HasPrefix(t, markNotRun)
}

// committed says an automation's transaction committed. Only the result's
// first line is the orchestrator's word on it; the script's own output below
// may say anything ("rolled back the draft", "not committed yet").
func committed(k *call) bool {
	return !k.isError && strings.HasPrefix(strings.TrimSpace(k.result), markCommitted)
}

// errorOf quotes the error of a result: its "Error: " line, else its first
// line.
func errorOf(result string) string {
	first := ""
	for _, line := range strings.Split(result, "\n") {
		line = strings.TrimSpace(line)
		if e, ok := strings.CutPrefix(line, markError); ok {
			return e
		}
		if first == "" {
			first = line
		}
	}
	if first == "" {
		return "an error without a message"
	}
	return first
}

// firstSentence is the text up to its first full stop.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
