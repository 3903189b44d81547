package statetest_test

import (
	"testing"
	"time"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/statetest"
)

func TestMemory(t *testing.T) {
	statetest.Run(t, func(*testing.T) state.Store { return memory.New(nil) })
}

func TestMemoryRetention(t *testing.T) {
	statetest.RunRetention(t, func(_ *testing.T, r statetest.Retention) (state.Store, func(time.Duration)) {
		clock := statetest.NewClock()
		return memory.Open(memory.Options{Now: clock.Now, SessionTTL: r.Sessions, EventTTL: r.Events}), clock.Advance
	})
}
