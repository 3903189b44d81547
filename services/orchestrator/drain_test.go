package orchestrator

import (
	"context"
	"testing"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
)

// TestCloseJoinsTheDrain shows Close returns only once the drain's timer
// goroutine has ended, whether the drain began on the process's context
// (SIGTERM) or in Close itself; peers are dialled lazily, so none need run.
func TestCloseJoinsTheDrain(t *testing.T) {
	for _, signalled := range []bool{false, true} {
		vars := config.Map(map[string]string{
			"NEXUS_MODEL_ROUTER_ADDR": "127.0.0.1:1", "NEXUS_CAPABILITY_ADDR": "127.0.0.1:1",
			"NEXUS_DATA_DIR": t.TempDir(), "NEXUS_INTERNAL_KEY": "drain-test-key-of-at-least-32-bytes", "NEXUS_REPLICA_ID": "drain-test",
		})
		ctx, cancel := context.WithCancel(t.Context())
		s, _ := buildService(ctx, t, vars)
		if signalled {
			cancel()
		}
		if err := s.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		select {
		case <-s.drainDone:
		default:
			t.Errorf("signalled %v: Close returned before the drain goroutine ended", signalled)
		}
		if !s.isDraining() {
			t.Errorf("signalled %v: the replica is not draining after Close", signalled)
		}
		cancel()
	}
}

// buildService builds the orchestrator from vars as its binary does, for
// the tests that reach into it; the caller closes it.
func buildService(ctx context.Context, t *testing.T, vars config.Lookuper) (*Service, *app.Env) {
	t.Helper()
	env, err := app.NewEnv(ctx, ServiceName, vars)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(ctx, vars)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, env
}
