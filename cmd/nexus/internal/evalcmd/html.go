package evalcmd

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
)

// page is report.html: one self-contained page (no script, no fetch), so
// it can be mailed or attached to a pull request as it is.
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>nexus eval: {{.Model}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d232a;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} .sub{color:#5b6470;margin-bottom:16px}
.totals{display:flex;gap:24px;margin:12px 0 20px}.totals div{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:8px 14px}
.totals b{display:block;font-size:20px}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border-bottom:1px solid #e4e7eb;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f5;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{width:140px;height:12px;background:#f3d2d2;border-radius:3px;overflow:hidden}.bar i{display:block;height:100%;background:#2f9e55}
.fail{color:#b42318}.pass{color:#2f7d44} .why{color:#b42318;font-size:12px;max-width:420px}
img{width:160px;border:1px solid #dde1e6;border-radius:4px;background:#fff}
</style></head><body>
<h1>nexus eval: {{.Model}}</h1>
<div class="sub">{{.Started.Format "2006-01-02 15:04 MST"}} · {{len .Tasks}} tasks × {{.Repeat}} · tokens and turns as the run history records them</div>
<div class="totals">
<div>pass rate<b class="{{if eq .Total.Passed .Total.Attempts}}pass{{else}}fail{{end}}">{{pct .Total.PassRate}}</b>{{.Total.Passed}} of {{.Total.Attempts}} ± {{pct .Total.Spread}}</div>
<div>turns per task<b>{{f1 .Total.Turns}}</b></div>
<div>tokens in / out<b>{{.Total.Tokens.Input}} / {{.Total.Tokens.Output}}</b>cache read {{.Total.Tokens.CacheRead}}, write {{.Total.Tokens.CacheWrite}}</div>
<div>cost<b>${{usd .Total.Tokens.CostUSD}}</b></div>
<div>wall time per task<b>{{secs .Total.WallMs}}</b></div>
</div>
<table><thead><tr><th>task</th><th>pass</th><th></th><th>turns</th><th>autom.</th><th>fixes</th><th>iter.</th><th>caps</th><th>rollb.</th><th>tokens in/out</th><th>cost</th><th>time</th><th>why it failed</th><th>final view</th></tr></thead><tbody>
{{range .Tasks}}<tr><td><b>{{.ID}}</b><br><small>{{.Kind}}: {{.Prompt}}</small></td>
<td class="n {{if eq .Figures.Passed .Figures.Attempts}}pass{{else}}fail{{end}}">{{.Figures.Passed}}/{{.Figures.Attempts}}</td>
<td><div class="bar" title="{{pct .Figures.PassRate}}"><i style="width:{{pctw .Figures.PassRate}}"></i></div></td>
<td class="n">{{f1 .Figures.Turns}}</td><td class="n">{{f1 .Figures.Automations}}</td><td class="n">{{f1 .Figures.Fixes}}</td><td class="n">{{f1 .Figures.Iterations}}</td>
<td class="n">{{f1 .Figures.CapsHit}}</td><td class="n">{{f1 .Figures.Rollbacks}}</td>
<td class="n">{{.Figures.Tokens.Input}}/{{.Figures.Tokens.Output}}</td><td class="n">${{usd .Figures.Tokens.CostUSD}}</td><td class="n">{{secs .Figures.WallMs}}</td>
<td class="why">{{range .Attempts}}{{if not .Passed}}#{{.Repeat}}: {{.Why}}<br>{{end}}{{end}}</td>
<td>{{with lastView .Attempts}}<img alt="the document after the run" src="{{.}}">{{end}}</td></tr>
{{end}}</tbody></table>
</body></html>
`

// HTML renders the report page.
func (r *Report) HTML() ([]byte, error) {
	t, err := template.New("report").Funcs(template.FuncMap{
		"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
		"pctw": func(f float64) template.CSS { return template.CSS(fmt.Sprintf("%.1f%%", f*100)) },
		"f1":   func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"usd":  func(f float64) string { return fmt.Sprintf("%.4f", f) },
		"secs": func(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) },
		"lastView": func(as []Attempt) template.URL {
			for i := len(as) - 1; i >= 0; i-- {
				if len(as[i].View) > 0 {
					// The bytes are the host's PNG, encoded here: a data URL of our own.
					return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(as[i].View))
				}
			}
			return ""
		},
	}).Parse(page)
	if err != nil {
		return nil, fmt.Errorf("report template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, r); err != nil {
		return nil, fmt.Errorf("render report.html: %w", err)
	}
	return b.Bytes(), nil
}
