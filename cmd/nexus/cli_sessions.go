package main

import (
	"io"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
)

// sessionsCmd is `nexus sessions`: the caller's sessions, newest first.
func sessionsCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "list your sessions, titled by their first prompt (--eval: nexus eval's too)",
		Args:  usageArgs(cobra.NoArgs),
	}
	conn := connFlags(cmd)
	out := addOutputFlag(cmd, "one object {\"sessions\": [...]} in protojson")
	eval := cmd.Flags().Bool("eval", false, "list nexus eval's sessions too")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.Sessions(cmd.Context(), cli.SessionsOptions{Conn: conn(), Output: out.v, Eval: *eval}, cliIO(stdin, stdout, stderr))
	}
	return cmd
}
