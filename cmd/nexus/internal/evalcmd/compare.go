package evalcmd

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Compare prints what changed from report a to report b: the totals, then
// each task whose pass rate, turns or tokens moved, and the tasks only one
// of them ran.
func Compare(w io.Writer, a, b *Report) error {
	fmt.Fprintf(w, "A: %s, %s (%d tasks × %d)\nB: %s, %s (%d tasks × %d)\n\n", a.Model, a.Started.Format("2006-01-02 15:04"), len(a.Tasks), a.Repeat,
		b.Model, b.Started.Format("2006-01-02 15:04"), len(b.Tasks), b.Repeat)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tA\tB\tCHANGE")
	row := func(name string, x, y float64, format string) {
		fmt.Fprintf(tw, "%s\t"+format+"\t"+format+"\t%+"+format[1:]+"\n", name, x, y, y-x)
	}
	row("pass rate %", a.Total.PassRate*100, b.Total.PassRate*100, "%.1f")
	row("turns per task", a.Total.Turns, b.Total.Turns, "%.2f")
	row("automations per task", a.Total.Automations, b.Total.Automations, "%.2f")
	row("fixes per task", a.Total.Fixes, b.Total.Fixes, "%.2f")
	row("input tokens", float64(a.Total.Tokens.Input), float64(b.Total.Tokens.Input), "%.0f")
	row("output tokens", float64(a.Total.Tokens.Output), float64(b.Total.Tokens.Output), "%.0f")
	row("cost USD", a.Total.Tokens.CostUSD, b.Total.Tokens.CostUSD, "%.4f")
	row("wall s per task", a.Total.WallMs/1000, b.Total.WallMs/1000, "%.1f")
	if err := tw.Flush(); err != nil {
		return err
	}
	byID := map[string]TaskReport{}
	for _, t := range a.Tasks {
		byID[t.ID] = t
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tPASS A→B\tTURNS A→B\tTOKENS A→B\tNOW FAILS BECAUSE")
	changed := 0
	for _, t := range b.Tasks {
		o, ok := byID[t.ID]
		delete(byID, t.ID)
		if !ok {
			fmt.Fprintf(tw, "%s\tonly in B: %d/%d\t\t\t\n", t.ID, t.Figures.Passed, t.Figures.Attempts)
			changed++
			continue
		}
		fa, fb := o.Figures, t.Figures
		if fa.PassRate == fb.PassRate && fa.Turns == fb.Turns && fa.Tokens.Input+fa.Tokens.Output == fb.Tokens.Input+fb.Tokens.Output {
			continue
		}
		changed++
		why := ""
		if fb.PassRate < fa.PassRate {
			for _, at := range t.Attempts {
				if !at.Passed {
					why = at.Why
					break
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d/%d → %d/%d\t%.1f → %.1f\t%d → %d\t%s\n", t.ID, fa.Passed, fa.Attempts, fb.Passed, fb.Attempts,
			fa.Turns, fb.Turns, fa.Tokens.Input+fa.Tokens.Output, fb.Tokens.Input+fb.Tokens.Output, why)
	}
	for _, t := range a.Tasks {
		if _, left := byID[t.ID]; left {
			fmt.Fprintf(tw, "%s\tonly in A: %d/%d\t\t\t\n", t.ID, t.Figures.Passed, t.Figures.Attempts)
			changed++
		}
	}
	if changed == 0 {
		fmt.Fprintln(tw, "(no task changed)\t\t\t\t")
	}
	return tw.Flush()
}
