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
		Short: "list your sessions",
		Args:  usageArgs(cobra.NoArgs),
	}
	conn := connFlags(cmd)
	out := addOutputFlag(cmd, "one object {\"sessions\": [...]} in protojson")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.Sessions(cmd.Context(), cli.SessionsOptions{Conn: conn(), Output: out.v}, cliIO(stdin, stdout, stderr))
	}
	return cmd
}
