package gateway

import (
	"context"
	"net"
	"os"
	"testing"

	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserUnreachable stops the gateway while a script awaits review in
// Chromium and starts it again on the same address, as a restart of nexus
// dev looks to the page: the page says Nexus cannot be reached and stops
// counting, keeps the approval given meanwhile and sends it once Nexus is
// back, and the run completes (web/e2e/unreachable.e2e.mjs).
func TestBrowserUnreachable(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "unreachable")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	stack := ot.Start(t, ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_box", "execute_task_automation", map[string]any{
			"description": "Add a box", "code": "import FreeCAD\nFreeCAD.ActiveDocument.addObject('Part::Box', 'Box')\n"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added a box.")}},
	).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	hostURL, _ := startHost(t, "pair-unreachable", "http://"+gwAddr)
	env := withInternalKey(devGatewayEnv(stack, gwAddr, "NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-unreachable"))
	// The gateway, stopped and started again on its address.
	serve := func() func() {
		lis, err := net.Listen("tcp", gwAddr)
		if err != nil {
			t.Fatalf("listen on %s again: %v", gwAddr, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- ServeOn(ctx, config.Map(env), lis) }()
		return func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("gateway: %v", err)
			}
		}
	}
	stop := serve()
	defer func() { stop() }()
	out := runE2ECued(t, webDir, "e2e/unreachable.e2e.mjs", "http://"+gwAddr, artifacts, 3*testTimeout, map[string]func() string{
		"stop-now": func() string {
			stop()
			stop = func() {}
			return "stopped"
		},
		"start-now": func() string {
			stop = serve()
			return "started"
		},
	})
	t.Logf("%s", out)
}
