package capability

import (
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
)

// HostBehaviour answers a host's provider, prompt guidance and stamped
// change-report epilogue from the same registry the service serves, for
// programs that run beside a host without a capability server (nexus host
// freecad --mcp teaches an MCP client what the service teaches Nexus's model).
func HostBehaviour(hostApp string) (*capabilityv1.GetGuidanceResponse, *capabilityv1.StampedScript, error) {
	r, err := newRegistry()
	if err != nil {
		return nil, nil, err
	}
	p, err := r.lookup(hostApp)
	if err != nil {
		return nil, nil, err
	}
	return &capabilityv1.GetGuidanceResponse{Host: p.info, Guidance: p.guidance}, p.stamp(), nil
}
