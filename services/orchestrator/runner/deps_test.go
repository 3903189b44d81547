package runner

import (
	"time"

	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// testDeps is what a replica with store alone lends its runs.
func testDeps(store state.Store) *Deps {
	return &Deps{Deps: call.Deps{Store: store, Now: time.Now}, Local: NewLocalLogs()}
}

// errLogRead stops a test's read of the run's log.
const errLogRead = state.Error("read the run's last chunks")
