package main

import (
	"io"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
)

// cancelCmd is `nexus cancel SESSION`: stop the session's active run; the
// terminal following it sees the run end as cancelled.
func cancelCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel SESSION",
		Short: "cancel a session's active run: nexus cancel SESSION",
		Args:  usageArgs(cobra.ExactArgs(1)),
	}
	conn := connFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cli.Cancel(cmd.Context(), cli.CancelOptions{Conn: conn(), SessionID: args[0]}, cliIO(stdin, stdout, stderr))
	}
	return cmd
}
