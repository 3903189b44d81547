package replicatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// span is what the test keeps of one exported span.
type span struct {
	traceID, name, service, instance string
}

// spanSink is an OTLP/gRPC trace receiver on loopback: the processes of the
// mesh export their spans to it, as they would to a collector.
type spanSink struct {
	collectortrace.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []span
}

func startSpanSink(t *testing.T) *spanSink {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &spanSink{addr: lis.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s
}

// env points a process's exporter at the sink, flushing every 100 ms.
func (s *spanSink) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + s.addr, "OTEL_BSP_SCHEDULE_DELAY=100"}
}

func (s *spanSink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		var service, instance string
		for _, kv := range rs.GetResource().GetAttributes() {
			switch kv.GetKey() {
			case "service.name":
				service = kv.GetValue().GetStringValue()
			case "service.instance.id":
				instance = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.spans = append(s.spans, span{hex.EncodeToString(sp.GetTraceId()), sp.GetName(), service, instance})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// find returns the first span of trace traceID that match reports.
func (s *spanSink) find(traceID string, match func(span) bool) (span, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spans {
		if sp.traceID == traceID && match(sp) {
			return sp, true
		}
	}
	return span{}, false
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestOneTraceAcrossReplicas starts runs with a browser's traceparent through
// one gateway and posts their results, with the traceparent the tool_call
// carried, through the other. The gateways, the replica suspended on the run
// and the replica that took the result must all report spans of that one
// trace; with three replicas behind round-robin, some results land on
// another replica than their run.
func TestOneTraceAcrossReplicas(t *testing.T) {
	sink := startSpanSink(t)
	m := startMeshWith(t, sink.env())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// Runs go on until one result crossed replicas (at least three runs, at
	// most twelve: round-robin makes twelve misses a one-in-half-a-million event).
	const submit = "nexus.agent.v1.OrchestratorService/SubmitToolResult"
	crossReplica := 0
	for i := 0; i < 12 && (i < 3 || crossReplica == 0); i++ {
		sid, err := m.createSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		traceID := randomHex(t, 16)
		resp, err := m.do(ctx, http.MethodPost, m.gateways[0]+"/v1/sessions/"+sid+"/runs",
			`{"prompt":"How many bodies does the document have?"}`, map[string]string{"traceparent": "00-" + traceID + "-" + randomHex(t, 8) + "-01"})
		if err != nil {
			t.Fatal(err)
		}
		var completed bool
		err = events(resp, func(c *agentv1.StreamChunk) bool {
			if tc := c.GetToolCall(); tc != nil {
				if !strings.Contains(tc.GetTraceparent(), traceID) {
					t.Errorf("run %d: tool_call traceparent %q is not in trace %s", i, tc.GetTraceparent(), traceID)
				}
				body := `{"toolCallId":"` + tc.GetToolCallId() + `","resultToken":"` + tc.GetResultToken() + `","result":{"stdout":"3 bodies"}}`
				r, err := m.do(ctx, http.MethodPost, m.gateways[1]+"/v1/sessions/"+sid+"/tool-results", body,
					map[string]string{"traceparent": tc.GetTraceparent()})
				if err != nil || r.StatusCode != http.StatusOK {
					t.Errorf("run %d: post result: %v %v", i, err, r)
				}
				if r != nil {
					r.Body.Close()
				}
			}
			completed = completed || c.GetComplete() != nil
			return true
		})
		if err != nil || !completed {
			t.Fatalf("run %d: %v, completed %v", i, err, completed)
		}

		var runSpan, submitSpan, gw0, gw1 span
		for {
			var ok [4]bool
			runSpan, ok[0] = sink.find(traceID, func(s span) bool { return s.service == "orchestrator" && s.name == "invoke_agent nexus" })
			submitSpan, ok[1] = sink.find(traceID, func(s span) bool { return s.service == "orchestrator" && s.name == submit })
			gw0, ok[2] = sink.find(traceID, func(s span) bool { return s.instance == "gateway-1" })
			gw1, ok[3] = sink.find(traceID, func(s span) bool { return s.instance == "gateway-2" })
			if ok == [4]bool{true, true, true, true} {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("run %d: trace %s lacks spans (run, result, gateway-1, gateway-2 found: %v)", i, traceID, ok)
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Logf("trace %s: run on %s, result taken by %s, through %s and %s", traceID, runSpan.instance, submitSpan.instance, gw0.instance, gw1.instance)
		if runSpan.instance != submitSpan.instance {
			crossReplica++
		}
	}
	if crossReplica == 0 {
		t.Fatalf("in 12 runs every result reached the replica running its run; nothing crossed replicas")
	}
}
