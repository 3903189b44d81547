package charttest

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// exportedMetrics reads deploy/metrics.txt: the metric families the services
// export (TestRunMetrics in cmd/nexus/systemtest checks that they do) and their labels.
func exportedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		out[fields[0]] = fields[1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// promqlWords are the PromQL functions, operators and keywords the
// dashboard and rules may use, and the labels Prometheus adds at scrape time.
func promqlWords() []string {
	return []string{
		"sum", "avg", "max", "min", "count", "rate", "irate", "increase", "histogram_quantile", "clamp_min", "clamp_max",
		"by", "without", "and", "or", "unless", "on", "ignoring", "group_left", "group_right", "offset", "bool",
		"le", "job", "instance", "namespace", "pod", "service",
	}
}

// identifiers returns the names an expression uses: metric and label names,
// functions and keywords, with strings, durations and numbers left out.
func identifiers(expr string) []string {
	expr = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
	expr = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(expr, "[]")
	expr = strings.ReplaceAll(expr, "$__rate_interval", "")
	var out []string
	for _, m := range regexp.MustCompile(`(^|[^a-zA-Z0-9_:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)`).FindAllStringSubmatch(expr, -1) {
		out = append(out, m[2])
	}
	return out
}

// checkExpr fails for any name in expr that is neither an exported metric
// (histograms with _bucket, _sum or _count), a label one of the used metrics
// has, nor a PromQL word.
func checkExpr(t *testing.T, where, expr string, metrics map[string][]string) {
	t.Helper()
	ids := identifiers(expr)
	var used []string
	for _, id := range ids {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(id, suffix); (suffix == "" || base != id) && metrics[base] != nil {
				used = append(used, base)
			}
		}
	}
	if len(used) == 0 {
		t.Errorf("%s: %q uses no exported metric", where, expr)
	}
	for _, id := range ids {
		known := slices.Contains(promqlWords(), id)
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(id, suffix); (suffix == "" || base != id) && metrics[base] != nil {
				known = true
			}
		}
		for _, m := range used {
			if slices.Contains(metrics[m], id) {
				known = true
			}
		}
		if !known {
			t.Errorf("%s: %q uses %q, which is no metric the services export nor a label of the metrics it uses", where, expr, id)
		}
	}
}

// TestDashboardAndRulesUseExportedMetrics checks every query of the Grafana
// dashboard and every alert of the PrometheusRule against deploy/metrics.txt.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	metrics := exportedMetrics(t)
	if len(metrics) < 10 {
		t.Fatalf("deploy/metrics.txt lists %d metrics", len(metrics))
	}
	t.Run("dashboard", func(t *testing.T) {
		raw, err := os.ReadFile("../nexus/dashboards/nexus.json")
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("dashboard JSON: %v", err)
		}
		n := 0
		for _, p := range dash.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				n++
				checkExpr(t, "panel "+p.Title, q.Expr, metrics)
			}
		}
		if n < 10 {
			t.Errorf("the dashboard has %d queries", n)
		}
	})
	t.Run("alert rules", func(t *testing.T) {
		r, err := render(t, []string{"values-production.yaml"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rules := objectsOf[*monitoringv1.PrometheusRule](r.objects)
		if len(rules) != 1 {
			t.Fatalf("%d PrometheusRules", len(rules))
		}
		var alerts []string
		for _, g := range rules[0].Spec.Groups {
			for _, rule := range g.Rules {
				alerts = append(alerts, rule.Alert)
				checkExpr(t, "alert "+rule.Alert, rule.Expr.String(), metrics)
			}
		}
		for _, want := range []string{"NexusRunsFailing", "NexusVendorErrors", "NexusToolWaitsPilingUp"} {
			if !slices.Contains(alerts, want) {
				t.Errorf("no alert %s among %v", want, alerts)
			}
		}
	})
	t.Run("the check finds a stranger", func(t *testing.T) {
		ids := identifiers(`sum(rate(nexus_runs_started_total{model="x"}[5m])) by (modle) > 1e-9`)
		if !slices.Contains(ids, "modle") || slices.Contains(ids, "x") || slices.Contains(ids, "e") || slices.Contains(ids, "m") {
			t.Errorf("identifiers = %v", ids)
		}
	})
}
