package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestConfig shows the OTEL_* settings: what each sampler keeps, and the
// error naming the variable for a value that cannot work.
func TestConfig(t *testing.T) {
	sampled := func(s sdktrace.Sampler) bool {
		r := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, Name: "x"})
		return r.Decision == sdktrace.RecordAndSample
	}
	cases := []struct {
		name    string
		cfg     Config
		err     string
		sampled bool
	}{
		{"zero config keeps every trace", Config{}, "", true},
		{"always_off", Config{Sampler: "always_off"}, "", false},
		{"ratio 0", Config{Sampler: "parentbased_traceidratio", SamplerArg: "0"}, "", false},
		{"ratio 1", Config{Sampler: "traceidratio", SamplerArg: "1"}, "", true},
		{"unknown sampler", Config{Sampler: "sometimes"}, "OTEL_TRACES_SAMPLER", false},
		{"ratio out of range", Config{Sampler: "traceidratio", SamplerArg: "1.5"}, "OTEL_TRACES_SAMPLER_ARG", false},
		{"unknown protocol", Config{Protocol: "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL", false},
		{"unknown exporter", Config{Exporter: "zipkin"}, "OTEL_TRACES_EXPORTER", false},
		{"bad headers", Config{Headers: "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				if _, err := New(t.Context(), "test", tc.cfg); err == nil {
					t.Error("New accepted a config Validate refuses")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := tc.cfg.sampler()
			if err != nil {
				t.Fatal(err)
			}
			if got := sampled(s); got != tc.sampled {
				t.Errorf("sampled %v, want %v", got, tc.sampled)
			}
		})
	}
}

// TestInternalHandler shows what the internal listener serves: Prometheus
// text at /metrics and the profiler's index at /debug/pprof/.
func TestInternalHandler(t *testing.T) {
	tel, err := New(t.Context(), "test", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	srv := httptest.NewServer(tel.InternalHandler())
	defer srv.Close()
	for path, want := range map[string]string{"/metrics": "go_goroutines", "/debug/pprof/": "goroutine"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("%s: status %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}
