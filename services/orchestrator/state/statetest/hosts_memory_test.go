package statetest_test

import (
	"testing"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/statetest"
)

func TestMemoryHosts(t *testing.T) {
	statetest.RunHosts(t, func(*testing.T) state.Hosts { return memory.NewHosts(nil) })
}

func TestMemoryDocuments(t *testing.T) {
	statetest.RunDocuments(t, func(*testing.T) state.Documents { return memory.NewDocuments() })
}

func TestMemoryModels(t *testing.T) {
	statetest.RunModels(t, func(*testing.T) state.Models { return memory.NewModels() })
}
