package statetest_test

import (
	"testing"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/statetest"
)

func TestMemory(t *testing.T) {
	statetest.Run(t, func(*testing.T) state.Store { return memory.New(nil) })
}
