package cli

import (
	"context"
	"net"
	"strings"
	"testing"

	"nexus.local/gateway"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRefusalReasonReachesTheCLI: a decision for a call that is not pending
// is refused; over gRPC and through the gateway alike the CLI reads the
// refusal's reason as the enum value and decides by it (a conflict: the call
// was decided elsewhere), and a key the gateway does not take is read as
// REFUSAL_REASON_UNAUTHENTICATED.
func TestRefusalReasonReachesTheCLI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	stack := startStack(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- gateway.ServeOn(gctx, config.Map(map[string]string{
			"NEXUS_ORCHESTRATOR_ADDR": stack.Addr, "NEXUS_API_KEYS": cliKey + ":ada", "NEXUS_INTERNAL_KEY": ot.InternalKey, "NEXUS_LOG_LEVEL": "error",
		}), lis)
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	env := func(key string) IO { return IO{Env: config.Map(map[string]string{"NEXUS_API_KEY": key})} }
	for name, c := range map[string]Conn{"grpc": {Addr: stack.Addr}, "gateway": {GatewayURL: "http://" + lis.Addr().String()}} {
		t.Run(name, func(t *testing.T) {
			b, err := connect(ctx, c, env(cliKey))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s, err := b.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.ReviewToolCall(ctx, &agentv1.ReviewToolCallRequest{SessionId: s.GetSessionId(), ToolCallId: "toolu_nope",
				Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE})
			if got := reasonOf(err); got != agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL || !isConflict(err) {
				t.Errorf("a decision for a call not pending: reason %s (conflict %v), want REFUSAL_REASON_NO_PENDING_CALL: %v", got, isConflict(err), err)
			}
			if !strings.Contains(err.Error(), "REFUSAL_REASON_NO_PENDING_CALL") {
				t.Errorf("the error does not name its reason: %v", err)
			}
		})
	}
	b, err := connect(ctx, Conn{GatewayURL: "http://" + lis.Addr().String()}, env("not-a-key"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.ListSessions(ctx, &agentv1.ListSessionsRequest{})
	if got := reasonOf(err); got != agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED {
		t.Errorf("a wrong key: reason %s, want REFUSAL_REASON_UNAUTHENTICATED: %v", got, err)
	}
}
