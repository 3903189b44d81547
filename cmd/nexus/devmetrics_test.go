package main

import (
	"strings"
	"testing"

	"nexus.local/platform/config"
)

// TestDevMetricsPorts shows how nexus dev spreads NEXUS_METRICS_ADDR over
// its four services, and the errors for an address it cannot use.
func TestDevMetricsPorts(t *testing.T) {
	cases := []struct {
		name, addr string
		want       map[string]string
		err        string
	}{
		{"unset", "", map[string]string{"gateway": "", "orchestrator": "", "model-router": "", "capability": ""}, ""},
		{"one port each", "127.0.0.1:9090", map[string]string{"gateway": "127.0.0.1:9090", "orchestrator": "127.0.0.1:9091", "model-router": "127.0.0.1:9092", "capability": "127.0.0.1:9093"}, ""},
		{"no port", "127.0.0.1", nil, "want host:port"},
		{"random port", "127.0.0.1:0", nil, "fixed port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := devMetricsLookups(config.Map(map[string]string{"NEXUS_METRICS_ADDR": tc.addr}))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "NEXUS_METRICS_ADDR") {
					t.Fatalf("err %v, want one naming NEXUS_METRICS_ADDR and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for svc, want := range tc.want {
				v, _ := got[svc].Lookup("NEXUS_METRICS_ADDR")
				if v != want {
					t.Errorf("%s: NEXUS_METRICS_ADDR=%q, want %q", svc, v, want)
				}
			}
		})
	}
}

// TestVersionCommand shows nexus version printing the build's version.
func TestVersionCommand(t *testing.T) {
	var out strings.Builder
	if code := execute(t.Context(), []string{"version"}, nil, &out, &out); code != 0 {
		t.Fatalf("nexus version exited %d: %s", code, out.String())
	}
	if !strings.HasPrefix(out.String(), "nexus dev") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("nexus version printed %q", out.String())
	}
}
