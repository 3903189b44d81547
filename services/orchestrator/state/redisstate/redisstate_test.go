package redisstate_test

import (
	"context"
	"testing"
	"time"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// openTest opens a store on url under a key prefix no other test uses
// (unless opts names one) and closes it when the test ends.
func openTest(t testing.TB, url string, opts redisstate.Options) *redisstate.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = statetest.Prefix(t, url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := redisstate.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("open redis store at %s (is redis-server running? make test starts one): %v", url, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store {
		return openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test"})
	})
}
