package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
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
	env := withInternalKey(realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true", "NEXUS_CORS_ORIGINS", "http://"+gwAddr,
		"NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-unreachable", "NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret))
	delete(env, "NEXUS_API_KEYS")
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

	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "--test-reporter=spec", "e2e/unreachable.e2e.mjs")
	node.Dir = webDir
	node.Env = append(os.Environ(), "NEXUS_GATEWAY_URL=http://"+gwAddr, "NEXUS_PAIRING_SECRET="+e2ePairingSecret,
		"NEXUS_ARTIFACTS="+artifacts, "CHROMIUM_PATH="+chromiumPath)
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var transcript strings.Builder
	node.Stderr = &transcript
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(&transcript, line)
		switch strings.TrimSpace(line) {
		case "stop-now":
			stop()
			stop = func() {}
			fmt.Fprintln(stdin, "stopped")
		case "start-now":
			stop = serve()
			fmt.Fprintln(stdin, "started")
			_ = stdin.Close()
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := node.Wait(); err != nil {
		t.Fatalf("node e2e/unreachable.e2e.mjs: %v\n%s", err, transcript.String())
	}
	t.Logf("%s", transcript.String())
}
