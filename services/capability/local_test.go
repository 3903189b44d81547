package capability

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestHostBehaviourMatchesTheService shows that what nexus host freecad --mcp
// teaches an MCP client is what the service serves over gRPC: the same
// guidance, and the same epilogue bytes under the same stamp.
func TestHostBehaviourMatchesTheService(t *testing.T) {
	c := startGRPC(t, sqlstoretest.Open(t, "sqlite"))
	ctx := context.Background()
	for _, host := range []string{"freecad", "revit"} {
		t.Run(host, func(t *testing.T) {
			guidance, stamp, err := HostBehaviour(host)
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.GetGuidance(ctx, &capabilityv1.GetGuidanceRequest{HostApp: host})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(g, guidance) {
				t.Errorf("guidance differs from the service's")
			}
			e, err := c.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: host})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(e.GetEpilogue(), stamp) {
				t.Errorf("epilogue stamp %s differs from the service's %s", stamp.GetContentHash(), e.GetEpilogue().GetContentHash())
			}
		})
	}
	if _, _, err := HostBehaviour("blender"); err == nil || !strings.Contains(err.Error(), "known hosts: freecad, revit") {
		t.Errorf("an unknown host: %v, want an error naming the known hosts", err)
	}
}
