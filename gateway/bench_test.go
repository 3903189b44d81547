package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// BenchmarkRunStream measures the gateway's per-event cost: b.N message
// chunks from the orchestrator over gRPC, framed as SSE and read by an HTTP
// client.
func BenchmarkRunStream(b *testing.B) {
	text := strings.Repeat("x", 64)
	orch := startTestOrchestrator(b, func(_ context.Context, run *testRun) {
		for range b.N {
			run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: text}}})
		}
	})
	base := startGateway(b, gatewayEnv(orch))
	session := createSession(b, base, aliceKey)
	b.ResetTimer()
	resp := request(b, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"go"}`)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n / int64(b.N))
}
