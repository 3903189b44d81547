package systemtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReflectionBehindAuthentication is a developer's first call with grpcurl
// (pinned in the Makefile, installed by make tools): with the CLI's
// credential it lists the orchestrator's services through server reflection
// and calls GetSession without any proto file at hand; without a credential
// the same listing is refused.
func TestReflectionBehindAuthentication(t *testing.T) {
	t.Parallel()
	grpcurl := repoPath(t, "bin/grpcurl")
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("bin/grpcurl is missing: run make tools: %v", err)
	}
	bin := buildNexus(t)
	orchAddr := freeAddr(t)
	peers := []string{
		"NEXUS_CAPABILITY_ADDR=" + freeAddr(t),
		"NEXUS_MODEL_ROUTER_ADDR=" + freeAddr(t),
		"NEXUS_ORCHESTRATOR_ADDR=" + orchAddr,
		"NEXUS_REDIS_URL=",
		"NEXUS_INTERNAL_KEY=" + meshInternalKey,
		"NEXUS_API_KEYS=k-alice:alice",
	}
	start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+orchAddr), "orchestrator")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	call := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, grpcurl, append([]string{"-plaintext", "-max-time", "20"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	auth := []string{"-H", "authorization: Bearer k-alice"}

	// The orchestrator starts listening a moment after the process starts.
	var listing string
	for {
		out, err := call(append(auth, orchAddr, "list")...)
		if err == nil {
			listing = out
			break
		}
		// Only "not listening yet" is worth another try.
		if ctx.Err() != nil || !strings.Contains(out, "connection refused") {
			t.Fatalf("grpcurl list with the CLI's credential: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"nexus.agent.v1.OrchestratorService", "grpc.health.v1.Health"} {
		if !strings.Contains(listing, want) {
			t.Errorf("grpcurl list lacks %s:\n%s", want, listing)
		}
	}

	out, err := call(append(auth, "-d", `{"sessionId":"s_no_such_session"}`, orchAddr, "nexus.agent.v1.OrchestratorService/GetSession")...)
	if err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("GetSession of an unknown session through reflection: err %v, want NotFound:\n%s", err, out)
	}

	out, err = call(orchAddr, "list")
	if err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("grpcurl list without a credential: err %v, want Unauthenticated:\n%s", err, out)
	}
}
