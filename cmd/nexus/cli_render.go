package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/platform/config"
)

// cliIO builds what the client commands need from the process: its
// environment, and whether stdout and stdin are terminals (styles, spinner,
// review prompts).
func cliIO(stdin io.Reader, stdout, stderr io.Writer) cli.IO {
	return cli.IO{Stdout: stdout, Stderr: stderr, TTY: isTerminal(stdout), Env: config.OS(), Stdin: stdin, StdinTTY: isTerminal(stdin)}
}

// isTerminal asks the terminal driver: /dev/null is a character device too,
// and nobody answers a review on it.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(file.Fd()))
}

// connFlags adds --addr and --gateway to cmd and answers how to reach Nexus
// once the flags are parsed: through the gateway when --gateway or
// NEXUS_GATEWAY_URL names one (and --addr was not given), else the
// orchestrator's gRPC address; with neither, the running nexus dev's.
func connFlags(cmd *cobra.Command) func() cli.Conn {
	addr := cmd.Flags().String("addr", envOr("NEXUS_ORCHESTRATOR_ADDR", ""), "orchestrator gRPC address (default $NEXUS_ORCHESTRATOR_ADDR, else the running nexus dev's, wherever it listens)")
	gateway := cmd.Flags().String("gateway", envOr("NEXUS_GATEWAY_URL", ""), "go through the gateway at this URL, with $NEXUS_API_KEY as the bearer token (default $NEXUS_GATEWAY_URL)")
	return func() cli.Conn {
		if cmd.Flags().Changed("addr") && !cmd.Flags().Changed("gateway") {
			return cli.Conn{Addr: *addr}
		}
		return cli.Conn{Addr: *addr, GatewayURL: *gateway}
	}
}

// envOr is the environment's value of key, or def when it is unset or
// empty: the default a flag shows and falls back to.
func envOr(key, def string) string {
	if v, ok := config.OS().Lookup(key); ok && v != "" {
		return v
	}
	return def
}

// outputFlag is --output: text or json.
type outputFlag struct{ v cli.Output }

func (f *outputFlag) String() string { return string(f.v) }
func (f *outputFlag) Type() string   { return "text|json" }
func (f *outputFlag) Set(s string) error {
	v, err := cli.ParseOutput(s)
	if err != nil {
		return err
	}
	f.v = v
	return nil
}

func addOutputFlag(cmd *cobra.Command, what string) *outputFlag {
	f := &outputFlag{v: cli.OutputText}
	cmd.Flags().VarP(f, "output", "o", "text for a person, or json: "+what)
	return f
}

// clientCommands are the commands that drive runs.
func clientCommands(stdin io.Reader, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{runCmd(stdin, stdout, stderr), sessionsCmd(stdin, stdout, stderr), cancelCmd(stdin, stdout, stderr), auditCmd(stdin, stdout, stderr), modelCmd(stdin, stdout, stderr), evalCmd(stdin, stdout, stderr), hostsCmd(stdin, stdout, stderr)}
}
