// Command nexus is the all-in-one binary: it runs the whole stack in one
// process (nexus dev), each service alone, the FreeCAD host runtime, and the
// command-line client.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/platform/version"
)

// Exit codes: 1 when a command ran and failed (a run that did not
// complete included), 2 when the command line itself is wrong.
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the command line args and answers the process's exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// started is set once a command's own code runs: an error before that
	// is cobra refusing the command line.
	started := false
	root := rootCommand(stdin, stdout, stderr, &started)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "nexus:", err)
	var usage cli.UsageError
	if !started || errors.As(err, &usage) {
		fmt.Fprintln(stderr, "(nexus help COMMAND, or nexus COMMAND --help, tells how to use it)")
		return exitUsage
	}
	return exitFailure
}

// rootCommand builds the command tree.
func rootCommand(stdin io.Reader, stdout, stderr io.Writer, started *bool) *cobra.Command {
	root := &cobra.Command{
		Use:   "nexus",
		Short: "plain-language automation of desktop design applications",
		Long: `nexus: plain-language automation of desktop design applications.

One binary: the whole stack in one process (nexus dev), each service alone,
the FreeCAD host runtime, the command-line client and the benchmark.
Exit codes: 0 success, 1 failure (a run that did not complete included),
2 a command line that cannot run as written.`,
		Version:       version.String() + " (" + version.GoVersion() + ")",
		SilenceErrors: true,
		SilenceUsage:  true,
		// An unknown command within two edits of a known one gets it suggested.
		SuggestionsMinimumDistance: 2,
		Args:                       usageArgs(cobra.NoArgs),
		// Without a command nexus prints its help and fails.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(stderr)
			_ = cmd.Help()
			return cli.UsageError{Err: errors.New("no command given")}
		},
		PersistentPreRun: func(*cobra.Command, []string) { *started = true },
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate(version.Line() + "\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cli.UsageError{Err: err} })
	root.AddGroup(&cobra.Group{ID: "stack", Title: "Stack:"}, &cobra.Group{ID: "client", Title: "Client:"},
		&cobra.Group{ID: "other", Title: "Other:"})
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")

	for _, c := range stackCommands(stdout, stderr) {
		c.GroupID = "stack"
		root.AddCommand(c)
	}
	for _, c := range clientCommands(stdin, stdout, stderr) {
		c.GroupID = "client"
		root.AddCommand(c)
	}
	bench := flagSetCommand("bench", "what the mesh adds to a vendor's latency", benchCommand, stdout, stderr)
	bench.GroupID = "other"
	root.AddCommand(bench, &cobra.Command{
		Use: "version", Short: "print the build's version", GroupID: "other", Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), version.Line())
			return nil
		},
	})
	return root
}

// usageArgs marks an argument count cobra refuses as a usage error. An
// unknown command gets the nearest ones cobra knows as suggestions.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil {
			return nil
		}
		if len(args) > 0 && cmd.HasSubCommands() {
			if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
				err = fmt.Errorf("%w; did you mean %s?", err, strings.Join(near, " or "))
			}
		}
		if cmd.HasParent() {
			err = fmt.Errorf("%s: %w", strings.TrimPrefix(cmd.CommandPath(), "nexus "), err)
		}
		return cli.UsageError{Err: err}
	}
}

// stackCommands are the commands that run services.
func stackCommands(stdout, stderr io.Writer) []*cobra.Command {
	var cmds []*cobra.Command
	for _, s := range []struct{ name, short string }{
		{"orchestrator", "run the orchestrator service alone (configured by the environment: NEXUS_GRPC_ADDR, ...)"},
		{"model-router", "run the model-router service alone (configured by the environment: NEXUS_GRPC_ADDR, ...)"},
		{"capability", "run the capability service alone (configured by the environment: NEXUS_GRPC_ADDR, ...)"},
		{"gateway", "run the HTTP gateway alone (configured by the environment: NEXUS_HTTP_ADDR, ...)"},
	} {
		cmds = append(cmds, &cobra.Command{
			Use: s.name, Short: s.short, Args: usageArgs(cobra.NoArgs),
			RunE: func(cmd *cobra.Command, _ []string) error { return serviceCommand(cmd.Context(), s.name) },
		})
	}
	dev := flagSetCommand("dev", "run every service in one process, with the web UI and the FreeCAD runtime", devCommand, stdout, stderr)
	host := &cobra.Command{
		Use:   "host APP",
		Short: "run a host runtime: nexus host freecad, nexus host revit --double",
		Args:  usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.UsageError{Err: errors.New("host: name the application: nexus host freecad, nexus host revit --double")}
			}
			return cli.UsageError{Err: fmt.Errorf("host: no runtime for %q: there are nexus host freecad and nexus host revit", args[0])}
		},
	}
	host.AddCommand(flagSetCommand("freecad", "run the FreeCAD host runtime (--mcp: serve it to an MCP client on stdio)",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return hostCommand(ctx, append([]string{"freecad"}, args...), stdout, stderr)
		}, stdout, stderr))
	host.AddCommand(flagSetCommand("revit", "run the Revit add-in's runtime on the Revit API double (nexus host revit --double)", hostRevitCommand, stdout, stderr))
	return append(cmds, dev, host)
}

// flagSetCommand registers a command whose flags the command itself
// declares on a standard flag set (dev, host freecad, host revit, bench) and
// parses with parseFlags. Its help is cobra's, like every other command's:
// the command answers its flag set for -h before it starts anything, so
// --help never listens on a port.
func flagSetCommand(name, short string, run func(context.Context, []string, io.Writer, io.Writer) error, stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:                name + " [flags]",
		Short:              short,
		Long:               short + ".",
		DisableFlagParsing: true,
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd.Context(), args, stdout, stderr)
		var help flagHelp
		var bad flagError
		switch {
		case errors.As(err, &help):
			c.Flags().AddGoFlagSet(help.fs)
			cmd.SetOut(stdout)
			return cmd.Help()
		case errors.As(err, &bad):
			return cli.UsageError{Err: fmt.Errorf("%s: %w", strings.TrimPrefix(cmd.CommandPath(), "nexus "), err)}
		}
		return err
	}
	return c
}
