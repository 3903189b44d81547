// Command nexus is the all-in-one binary: it runs the whole stack in one
// process (nexus dev), each service alone, the FreeCAD host runtime, and the
// command-line client.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"nexus.local/platform/app"
	"nexus.local/platform/version"
)

func main() { app.Main(realMain) }

const usage = `nexus: plain-language automation of desktop design applications

usage: nexus <command> [flags]

stack:
  dev            run every service in one process, with the web UI and the FreeCAD runtime
  orchestrator   run the orchestrator service alone (NEXUS_GRPC_ADDR)
  model-router   run the model-router service alone (NEXUS_GRPC_ADDR)
  capability     run the capability service alone (NEXUS_GRPC_ADDR)
  gateway        run the HTTP gateway alone (NEXUS_HTTP_ADDR)
  host freecad   run the FreeCAD host runtime [--addr A] [--document F.FCStd] [--gui] [--mcp: serve it to an MCP client on stdio]

client:
  run            run a prompt against a session: nexus run [--model M] "prompt"
  sessions       list your sessions
  cancel         cancel a session's active run: nexus cancel SESSION_ID
  audit          a session's runs and the exact scripts that left: nexus audit [--code] SESSION_ID

  version        print the build's version

measure:
  bench          what the mesh adds to a vendor's latency: nexus bench [--short] [--redis auto] [--json F] [--chart F.svg]
`

func realMain(ctx context.Context) error {
	return dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "dev":
		return devCommand(ctx, rest, stdout, stderr)
	case "orchestrator", "model-router", "capability", "gateway":
		return serviceCommand(ctx, cmd)
	case "host":
		return hostCommand(ctx, rest, stdout, stderr)
	case "run":
		return runCommand(ctx, rest, stdout, stderr)
	case "sessions":
		return sessionsCommand(ctx, rest, stdout, stderr)
	case "cancel":
		return cancelCommand(ctx, rest, stdout, stderr)
	case "bench":
		return benchCommand(ctx, rest, stdout, stderr)
	case "audit":
		return auditCommand(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "nexus %s (%s)\n", version.String(), version.GoVersion())
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
