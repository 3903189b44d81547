package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/cmd/nexus/internal/evalcmd"
	tasks "nexus.local/eval"
)

// evalCmd is `nexus eval`: the BIM tasks run as real runs through the mesh,
// each checked on its document, with a report; `nexus eval compare` reads two.
func evalCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval --model M [flags]",
		Short: "measure whether runs get BIM tasks right, and at what cost: nexus eval --model M",
		Long: `Run the eval tasks as real runs through Nexus, one session each with review
off and a fresh document, then check each resulting document with the task's
checker on the host. A progress line per task; report.json and report.html go
to --report (default ./nexus-eval/<time>/).

--model replay/expert replays each task's reference solution through the real
loop (no vendor account needed); a configured vendor model runs for real.
Without --host-url, nexus eval starts --concurrency runtimes of its own for
each host the tasks name (headless FreeCAD; for Revit tasks the add-in's
runtime on the Revit double); with it, tasks run one at a time on that
runtime's document, which each task clears, and tasks of another host fail
as not run.

Exit status: 0 when every task passed; 1 when any failed or could not run;
2 for a command line that cannot run.`,
		Example: `  nexus eval --model replay/expert
  nexus eval --model anthropic/claude-sonnet-4-5 --tasks '2*' --repeat 3 --concurrency 2
  nexus eval compare nexus-eval/before/report.json nexus-eval/after/report.json`,
		Args: usageArgs(cobra.NoArgs),
	}
	conn := connFlags(cmd)
	f := cmd.Flags()
	model := f.String("model", "", "the model to measure, vendor/model (replay/expert: the reference solutions)")
	pattern := f.String("tasks", "", "comma-separated globs of task ids, e.g. '0*,2[1-5]-*' (default all)")
	repeat := f.Int("repeat", 1, fmt.Sprintf("runs per task, for a rate and its spread (1 to %d)", evalcmd.MaxRepeat))
	conc := f.Int("concurrency", 1, fmt.Sprintf("tasks at once, each on a FreeCAD runtime of its own (1 to %d)", evalcmd.MaxConcurrency))
	report := f.String("report", "", "folder for report.json and report.html (default ./nexus-eval/<time>)")
	taskDir := f.String("task-dir", "", "read the tasks from this folder (lib.py, tasks/) instead of the ones built in")
	hostURL := f.String("host-url", envOr("NEXUS_HOST_URL", ""), "a running host runtime to use instead of starting them (default $NEXUS_HOST_URL)")
	hostToken := f.String("host-token", envOr("NEXUS_HOST_TOKEN", ""), "its pairing token (default $NEXUS_HOST_TOKEN)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		set := tasks.Builtin()
		if *taskDir != "" {
			set = os.DirFS(*taskDir)
		}
		all, err := tasks.Load(set)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("eval: %w", err)}
		}
		chosen, err := tasks.Select(all, *pattern)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("eval: %w", err)}
		}
		opt := evalcmd.Options{Model: *model, Tasks: chosen, Repeat: *repeat, Progress: stderr}
		if err := opt.Validate(); err != nil {
			return cli.UsageError{Err: err}
		}
		switch {
		case *conc < 1 || *conc > evalcmd.MaxConcurrency:
			return cli.UsageError{Err: fmt.Errorf("eval: --concurrency %d: want 1 to %d", *conc, evalcmd.MaxConcurrency)}
		case *hostURL != "" && *conc > 1:
			return cli.UsageError{Err: fmt.Errorf("eval: --concurrency %d needs a document per task: drop --host-url and nexus eval starts %d runtimes of its own", *conc, *conc)}
		}
		dir := *report
		if dir == "" {
			dir = filepath.Join("nexus-eval", time.Now().UTC().Format("20060102-150405"))
		}
		o := cliIO(stdin, stdout, stderr)
		m, err := cli.ConnectMesh(ctx, conn(), o)
		if err != nil {
			return err
		}
		defer m.Close()
		// Whether Nexus answers is asked once, after the cheap check of a
		// runtime named by --host-url and before runtimes are started.
		var hosts *evalcmd.Hosts
		if *hostURL != "" {
			if hosts, err = evalcmd.ConnectHosts(ctx, *hostURL, *hostToken, nil); err != nil {
				return fmt.Errorf("eval: %w", err)
			}
		}
		if err := cli.Reach(ctx, m); err != nil {
			return err
		}
		if hosts == nil {
			fmt.Fprintf(stderr, "starting %d runtime(s) per host\n", *conc)
			if hosts, err = evalcmd.StartHosts(ctx, *conc, nil, chosen); err != nil {
				return fmt.Errorf("eval: %w", err)
			}
		}
		defer hosts.Close()
		fmt.Fprintf(stderr, "%d tasks × %d with %s through %s\n", len(chosen), *repeat, *model, m.Where())
		rep, err := evalcmd.Run(ctx, opt, m, hosts)
		if err != nil {
			return err
		}
		if err := rep.Write(dir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d of %d passed (%.0f%%), %.1f turns and %d/%d tokens per task on average, $%.4f in all; report in %s\n",
			rep.Model, rep.Total.Passed, rep.Total.Attempts, rep.Total.PassRate*100, rep.Total.Turns,
			rep.Total.Tokens.Input/int64(rep.Total.Attempts), rep.Total.Tokens.Output/int64(rep.Total.Attempts), rep.Total.Tokens.CostUSD, dir)
		if !rep.AllPassed() {
			return fmt.Errorf("eval: %d of %d attempts failed:\n  %s", rep.Total.Attempts-rep.Total.Passed, rep.Total.Attempts, joinLines(rep.Failures))
		}
		return nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "compare A.json B.json",
		Short: "what changed between two eval reports",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := evalcmd.ReadReport(args[0])
			if err != nil {
				return cli.UsageError{Err: fmt.Errorf("eval compare: %w", err)}
			}
			b, err := evalcmd.ReadReport(args[1])
			if err != nil {
				return cli.UsageError{Err: fmt.Errorf("eval compare: %w", err)}
			}
			return evalcmd.Compare(stdout, a, b)
		},
	})
	return cmd
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  ") }
