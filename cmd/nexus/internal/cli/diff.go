package cli

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a fix's diff shows around each
// change, as the web UI does.
const diffContext = 2

// diffLine is one line of a line diff: op is ' ' (kept), '+' or '-'.
type diffLine struct {
	op   byte
	text string
}

// diffLines diffs two scripts by lines (longest common subsequence), so a fix
// shows as what changed from the script that failed rather than whole again.
func diffLines(before, after string) []diffLine {
	a := strings.Split(strings.TrimSuffix(before, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(after, "\n"), "\n")
	n, m := len(a), len(b)
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{' ', a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{'-', a[i]})
			i++
		default:
			out = append(out, diffLine{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{'-', a[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{'+', b[j]})
	}
	return out
}

// hunks keeps the changed lines with diffContext unchanged lines around each;
// a run of unchanged lines left out becomes one "…" line, and each hunk
// starts with the line number it begins at in the new script.
func hunks(lines []diffLine) []string {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l.op == ' ' {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(lines)-1, i+diffContext); k++ {
			keep[k] = true
		}
	}
	var out []string
	newLine, gap := 0, true
	for i, l := range lines {
		if l.op != '-' {
			newLine++
		}
		if !keep[i] {
			gap = true
			continue
		}
		if gap {
			if len(out) > 0 {
				out = append(out, "…")
			}
			at := newLine
			if l.op == '-' {
				at = newLine + 1
			}
			out = append(out, fmt.Sprintf("@@ line %d @@", at))
			gap = false
		}
		out = append(out, string(l.op)+" "+l.text)
	}
	return out
}
