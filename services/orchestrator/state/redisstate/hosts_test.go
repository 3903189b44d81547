package redisstate_test

import (
	"testing"

	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

func TestHostsConformance(t *testing.T) {
	statetest.RunHosts(t, func(t *testing.T) state.Hosts {
		return redisstate.NewHosts(openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test"}))
	})
}

func TestDocumentsConformance(t *testing.T) {
	statetest.RunDocuments(t, func(t *testing.T) state.Documents {
		return redisstate.NewDocuments(openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test"}))
	})
}

func TestModelsConformance(t *testing.T) {
	statetest.RunModels(t, func(t *testing.T) state.Models {
		return redisstate.NewModels(openTest(t, statetest.RedisURL(), redisstate.Options{ReplicaID: "test"}))
	})
}
