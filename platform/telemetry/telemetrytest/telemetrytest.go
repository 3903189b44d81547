// Package telemetrytest receives what Nexus processes export, as a collector
// and a Prometheus server would: an OTLP trace receiver on loopback (gRPC or
// HTTP) and a scraper of the internal metrics listener.
package telemetrytest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one exported span with its attributes flattened to strings
// (arrays as their elements joined by commas).
type Span struct {
	Service string
	Name    string
	Kind    tracepb.Span_SpanKind
	TraceID []byte
	// SpanID and ParentID place the span in its trace.
	SpanID, ParentID []byte
	// Start and End are the span's times, in Unix nanoseconds.
	Start, End uint64
	Attrs      map[string]string
	Status     tracepb.Status_StatusCode
}

// Sink is an OTLP trace receiver on loopback.
type Sink struct {
	collectortrace.UnimplementedTraceServiceServer
	// Env points a process's exporter at the sink (OTEL_* variables).
	Env map[string]string

	mu    sync.Mutex
	spans []Span
}

// StartSink serves an OTLP receiver speaking protocol ("grpc" or
// "http/protobuf") until the test ends.
func StartSink(t testing.TB, protocol string) *Sink {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sink{Env: map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
	}}
	switch protocol {
	case "grpc":
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, s)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
	case "http/protobuf":
		srv := &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(func() { _ = srv.Close() })
	default:
		t.Fatalf("unknown OTLP protocol %q", protocol)
	}
	return s
}

func (s *Sink) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.add(&req)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Export receives spans over OTLP/gRPC.
func (s *Sink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (s *Sink) add(req *collectortrace.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := flatten(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.spans = append(s.spans, Span{Service: service, Name: sp.GetName(), Kind: sp.GetKind(), TraceID: sp.GetTraceId(),
					SpanID: sp.GetSpanId(), ParentID: sp.GetParentSpanId(), Start: sp.GetStartTimeUnixNano(), End: sp.GetEndTimeUnixNano(),
					Attrs: flatten(sp.GetAttributes()), Status: sp.GetStatus().GetCode()})
			}
		}
	}
}

func flatten(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = valueString(kv.GetValue())
	}
	return out
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueString(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// WaitSpans returns the spans that match once there are at least n of them,
// or fails the test after timeout.
func (s *Sink) WaitSpans(t testing.TB, n int, timeout time.Duration, match func(Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var got []Span
		s.mu.Lock()
		for _, sp := range s.spans {
			if match(sp) {
				got = append(got, sp)
			}
		}
		s.mu.Unlock()
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
