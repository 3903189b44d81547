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

// TestDurable opens a second store on the same server and prefix between the
// writes and the reads, as a replica that replaces another does.
func TestDurable(t *testing.T) {
	statetest.RunDurable(t, func(t *testing.T) (state.Hosts, state.Documents, statetest.Reopen) {
		url := statetest.RedisURL()
		opts := redisstate.Options{ReplicaID: "first", Prefix: statetest.Prefix(t, url)}
		s := openTest(t, url, opts)
		return redisstate.NewHosts(s), redisstate.NewDocuments(s), func(t *testing.T) (state.Hosts, state.Documents) {
			opts.ReplicaID = "second"
			s := openTest(t, url, opts)
			return redisstate.NewHosts(s), redisstate.NewDocuments(s)
		}
	})
}
