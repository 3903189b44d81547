package redisstate_test

import (
	"testing"
	"time"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestRetention holds Redis to the suite's retention cases. Its clock is the
// server's, which no test can move, so advancing it waits.
func TestRetention(t *testing.T) {
	statetest.RunRetention(t, func(t *testing.T, r statetest.Retention) (state.Store, func(time.Duration)) {
		s := openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test", SessionTTL: r.Sessions, EventTTL: r.Events})
		return s, time.Sleep
	})
}
