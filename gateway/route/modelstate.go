package route

import (
	"fmt"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// ModelState reads the state query parameter of a call's 3D model, which
// the HTTP route and the MCP resource share: "after" (or none) is the
// state the script left, "before" a preview's document before its script.
func ModelState(param string) (agentv1.ModelState, error) {
	switch param {
	case "", "after":
		return agentv1.ModelState_MODEL_STATE_UNSPECIFIED, nil
	case "before":
		return agentv1.ModelState_MODEL_STATE_BEFORE, nil
	}
	return 0, fmt.Errorf("state must be before or after, got %q", param)
}
