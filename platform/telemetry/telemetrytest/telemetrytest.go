// Package telemetrytest receives what Nexus processes export, as a collector
// and a Prometheus server would: an OTLP trace receiver on loopback (gRPC or
// HTTP) and a scraper of the internal metrics listener.
package telemetrytest

import (
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"nexus.local/platform/telemetry/otlpreceiver"
)

// Span is one exported span with its attributes flattened to strings.
type Span = otlpreceiver.Span

// Sink is an OTLP trace receiver on loopback.
type Sink struct {
	*otlpreceiver.Receiver
	// Env points a process's exporter at the sink (OTEL_* variables).
	Env map[string]string
}

// StartSink serves an OTLP receiver speaking protocol ("grpc" or
// "http/protobuf") until the test ends.
func StartSink(t testing.TB, protocol string) *Sink {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sink{Receiver: &otlpreceiver.Receiver{}, Env: map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
	}}
	switch protocol {
	case "grpc":
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, s.Receiver)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
	case "http/protobuf":
		srv := &http.Server{Handler: s.Receiver, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(func() { _ = srv.Close() })
	default:
		t.Fatalf("unknown OTLP protocol %q", protocol)
	}
	return s
}

// WaitSpans returns the spans that match once there are at least n of them,
// or fails the test after timeout.
func (s *Sink) WaitSpans(t testing.TB, n int, timeout time.Duration, match func(Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Spans(match)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d matching spans after %s, want %d", len(got), timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Scrape reads a process's internal /metrics and parses it as the
// Prometheus text format.
func Scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", addr, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the metrics of %s: %v", addr, err)
	}
	return fams
}

// Value sums the samples of family name whose labels include want
// (counter and gauge values, histogram sample counts).
func Value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	f := fams[name]
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// LabelValues lists the values label takes in family name.
func LabelValues(fams map[string]*dto.MetricFamily, name, label string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !seen[l.GetValue()] {
				seen[l.GetValue()] = true
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}
