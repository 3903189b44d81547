// Package otlpreceiver keeps the spans Nexus processes export over OTLP, as
// a collector would: over HTTP (POST /v1/traces, protobuf) or gRPC. The
// tests read what a process traced from it, and nexus bench --trace the
// stages of one run.
package otlpreceiver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxExport bounds one export request's body.
const maxExport = 64 << 20

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
	// Events are the moments the span noted, in the order it noted them.
	Events []Event
}

// Event is a moment a span noted: its name and time in Unix nanoseconds.
type Event struct {
	Name string
	Time uint64
}

// Receiver holds every span exported to it; its zero value is ready.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer

	mu    sync.Mutex
	spans []Span
}

// ServeHTTP answers OTLP/HTTP exports (POST /v1/traces, protobuf).
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, maxExport))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &in); err != nil {
		http.Error(w, fmt.Sprintf("decode the export: %v", err), http.StatusBadRequest)
		return
	}
	r.add(&in)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Export receives spans over OTLP/gRPC.
func (r *Receiver) Export(_ context.Context, in *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.add(in)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) add(in *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range in.GetResourceSpans() {
		service := flatten(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				var events []Event
				for _, e := range sp.GetEvents() {
					events = append(events, Event{Name: e.GetName(), Time: e.GetTimeUnixNano()})
				}
				r.spans = append(r.spans, Span{Service: service, Name: sp.GetName(), Kind: sp.GetKind(), TraceID: sp.GetTraceId(),
					SpanID: sp.GetSpanId(), ParentID: sp.GetParentSpanId(), Start: sp.GetStartTimeUnixNano(), End: sp.GetEndTimeUnixNano(),
					Attrs: flatten(sp.GetAttributes()), Status: sp.GetStatus().GetCode(), Events: events})
			}
		}
	}
}

// Spans returns the spans received so far that match.
func (r *Receiver) Spans(match func(Span) bool) []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, sp := range r.spans {
		if match(sp) {
			out = append(out, sp)
		}
	}
	return out
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
