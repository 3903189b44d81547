package proctest

import (
	"net"
	"testing"
)

// HoldServicePorts listens on a free loopback port for every address
// setting a Nexus service or runtime reads, until the test ends, and answers
// the environment that points each setting at its held port: a command run
// with it that starts a service fails to listen (and exits non-zero)
// instead of passing unnoticed.
func HoldServicePorts(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, k := range []string{"NEXUS_HTTP_ADDR", "NEXUS_GRPC_ADDR", "NEXUS_ORCHESTRATOR_ADDR", "NEXUS_MODEL_ROUTER_ADDR",
		"NEXUS_CAPABILITY_ADDR", "NEXUS_HOST_ADDR", "NEXUS_METRICS_ADDR"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		env = append(env, k+"="+l.Addr().String())
	}
	return env
}
