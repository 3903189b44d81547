package runner

import (
	"fmt"
	"slices"
	"strings"
)

// lineEdit replaces lines start_line..end_line (1-based, inclusive) of the
// held script with new_text. end_line = start_line-1 inserts before
// start_line; an empty new_text deletes the lines.
type lineEdit struct {
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	NewText   string `json:"new_text"`
}

// applyEdits merges edits into script. Line numbers refer to script as it is
// before any of the edits, so they are applied bottom-up. The checks are
// advisory: the merged script always comes back, with notes about what
// looked suspicious. A truly broken merge fails when it runs, inside a
// transaction that rolls back, which tells the model more than a guess would.
func applyEdits(script string, edits []lineEdit) (string, []string) {
	orig := splitLines(script)
	lines := slices.Clone(orig)
	var notes []string

	order := slices.Clone(edits)
	slices.SortStableFunc(order, func(a, b lineEdit) int { return b.StartLine - a.StartLine })
	for i := 1; i < len(order); i++ {
		// order is descending, so order[i] starts at or before order[i-1].
		if order[i].EndLine >= order[i-1].StartLine {
			notes = append(notes, fmt.Sprintf("edits at lines %d-%d and %d-%d overlap; they were applied bottom-up", order[i].StartLine, order[i].EndLine, order[i-1].StartLine, order[i-1].EndLine))
		}
	}

	for _, e := range order {
		start, end := e.StartLine, e.EndLine
		if start < 1 || start > len(orig)+1 || end > len(orig) || end < start-1 {
			notes = append(notes, fmt.Sprintf("edit at lines %d-%d is outside the script (it has %d lines); it was clamped to the script", e.StartLine, e.EndLine, len(orig)))
			start = min(max(start, 1), len(lines)+1)
			end = min(max(end, start-1), len(lines))
		}
		repl := splitLines(e.NewText)
		if e.NewText == "" {
			repl = nil
		}
		notes = append(notes, checkEdit(lines, start, end, repl)...)
		lines = slices.Concat(lines[:start-1], repl, lines[end:])
	}

	merged := strings.Join(lines, "\n")
	if len(orig) >= 4 && len(lines)*2 <= len(orig) {
		notes = append(notes, fmt.Sprintf("the script shrank from %d to %d lines; check that the edits removed only what they meant to", len(orig), len(lines)))
	}
	return merged, notes
}

// checkEdit looks for the smells of a misplaced edit: a replacement that
// repeats the line just above or below it, and a change of indentation.
func checkEdit(lines []string, start, end int, repl []string) []string {
	var notes []string
	if len(repl) > 0 {
		if above := start - 2; above >= 0 && nonBlank(lines[above]) && lines[above] == repl[0] {
			notes = append(notes, fmt.Sprintf("the new text at line %d repeats line %d above it: %q", start, above+1, strings.TrimSpace(repl[0])))
		}
		if below := end; below < len(lines) && nonBlank(lines[below]) && lines[below] == repl[len(repl)-1] {
			notes = append(notes, fmt.Sprintf("the new text at line %d repeats the line after the edit: %q", start, strings.TrimSpace(repl[len(repl)-1])))
		}
	}
	if end >= start && len(repl) > 0 {
		oldIndent, okOld := firstIndent(lines[start-1 : end])
		newIndent, okNew := firstIndent(repl)
		if okOld && okNew && oldIndent != newIndent {
			notes = append(notes, fmt.Sprintf("the edit at line %d changes indentation from %d to %d columns", start, len(oldIndent), len(newIndent)))
		}
	}
	return notes
}

func nonBlank(s string) bool { return strings.TrimSpace(s) != "" }

func firstIndent(lines []string) (string, bool) {
	for _, l := range lines {
		if nonBlank(l) {
			return l[:len(l)-len(strings.TrimLeft(l, " \t"))], true
		}
	}
	return "", false
}

// splitLines splits s into lines without a trailing empty line.
func splitLines(s string) []string {
	s = strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
