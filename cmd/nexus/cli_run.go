package main

import (
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// reviewFlag is --review: every, automations, preview or none.
type reviewFlag struct {
	name string
	v    agentv1.ReviewPolicy
}

func (f *reviewFlag) String() string { return f.name }
func (f *reviewFlag) Type() string   { return "every|automations|preview|none" }
func (f *reviewFlag) Set(s string) error {
	v, err := cli.ParseReview(s)
	if err != nil {
		return err
	}
	f.name, f.v = s, v
	return nil
}

// runCmd is `nexus run`: a prompt, streamed to the terminal, with the
// scripts that wait for review shown and decided here; a linked host
// carries the tool calls, or nexus run does to a paired runtime that is
// not linked.
func runCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var opt cli.RunOptions
	review := &reviewFlag{name: "preview", v: agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW}
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT... | run --session ID",
		Short: `run a prompt against a session: nexus run [--model M] "prompt"`,
		Long: `Run a prompt: stream the run and ask you to review the scripts that wait for
a person. The session's linked host (nexus host freecad --connect URL, or the
runtime nexus dev links) carries its scripts; nexus run only watches them.

A host runtime that is not linked is paired with --host-url/--host-token
($NEXUS_HOST_URL, $NEXUS_HOST_TOKEN), or is the one the nexus dev of this user
runs: nexus run then carries the calls of a session with no linked host to it.
Without either, a new session is for --host-app (freecad) and its first call
waits for a host of that application to link. By default (--review preview) a script that would change the document
first runs as a preview, rolled back, and waits for your decision on its change
report and view; a script that fails goes back to the model without asking.
Answer a (approve: the previewed script commits), d (decline) or e (edit in
$EDITOR; the edited script is previewed in turn and waits for your decision).
--review automations asks before every such script runs, without a preview;
--review every asks for inspections too. --yes reviews nothing, for unattended runs;
when a script waits for review and stdin is not a terminal, nexus run fails and
says so (the run keeps waiting in its session, where the web UI can review it).

--session ID continues a session; without a prompt it joins the session's run
that is going (shown from its start) and takes up what waits now, such as a
script awaiting your review. --new-document starts the new session on a new,
empty document (the one open stays saved where it was).

Exit status: 0 when the run completed; 1 when it did not (an error, a cancel,
a host that could not be reached, refused the token or serves another
application); 2 for a command line that cannot run.`,
		Example: `  nexus run "Build a small room: four walls on a level, with a door and a window."
  nexus run --review preview "add a door" --session s_123
  nexus run --session s_123
  nexus run --new-document "Build a small room: four walls on a level, with a door and a window."
  nexus run --yes --output json "list the walls" | jq .`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			// cli.Run refuses a blank prompt as a usage error.
			opt.Prompt = strings.Join(args, " ")
			yes, _ := cmd.Flags().GetBool("yes")
			if yes && cmd.Flags().Changed("review") && review.v != agentv1.ReviewPolicy_REVIEW_POLICY_NONE {
				return cli.UsageError{Err: errors.New("run: --yes reviews nothing, --review " + review.name + " asks for reviews: give one")}
			}
			switch {
			case yes:
				opt.Review = agentv1.ReviewPolicy_REVIEW_POLICY_NONE
			case cmd.Flags().Changed("review") || opt.SessionID == "":
				opt.Review = review.v
			}
			return cli.Run(cmd.Context(), opt, cliIO(stdin, stdout, stderr))
		},
	}
	conn := connFlags(cmd)
	out := addOutputFlag(cmd, "one protojson StreamChunk per line")
	f := cmd.Flags()
	f.StringVar(&opt.Model, "model", "", "model of this run, vendor/model; empty keeps the session's")
	f.StringVar(&opt.HostURL, "host-url", envOr("NEXUS_HOST_URL", ""), "host runtime URL (default $NEXUS_HOST_URL, else nexus dev's)")
	f.StringVar(&opt.HostToken, "host-token", envOr("NEXUS_HOST_TOKEN", ""), "host runtime pairing token (default $NEXUS_HOST_TOKEN)")
	f.StringVar(&opt.HostApp, "host-app", "freecad", "application of a new session when no host runtime is paired with nexus run: freecad or revit")
	f.StringVar(&opt.SessionID, "session", "", "continue this session instead of creating one; without a prompt, join its run that is going")
	f.BoolVar(&opt.NewDocument, "new-document", false, "start the new session on a new, empty document")
	f.StringVar(&opt.ViewsDir, "views", envOr("NEXUS_VIEWS_DIR", "nexus-views"), "folder the rendered views are saved in, one subfolder per session (default $NEXUS_VIEWS_DIR)")
	f.Var(review, "review", "which scripts wait for your review: every, automations, preview (a new session's default: automations, after a rolled-back preview run), none")
	f.BoolP("yes", "y", false, "review nothing (--review none), for unattended runs")
	cmd.PreRun = func(*cobra.Command, []string) {
		opt.Conn, opt.Output = conn(), out.v
	}
	return cmd
}
