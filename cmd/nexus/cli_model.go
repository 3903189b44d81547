package main

import (
	"io"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
)

// modelCmd is `nexus model SESSION CALL`: the 3D model of a call's result.
func modelCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model [--before] [-f FILE] SESSION CALL",
		Short: "save the 3D model (binary glTF) of a preview's or commit's result: nexus model SESSION CALL",
		Args:  usageArgs(cobra.ExactArgs(2)),
	}
	conn := connFlags(cmd)
	before := cmd.Flags().Bool("before", false, "a preview's document before its script, instead of the state it leaves")
	file := cmd.Flags().StringP("file", "f", "", "where to write the .glb (- for standard output; default CALL.glb)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cli.Model(cmd.Context(), cli.ModelOptions{Conn: conn(), SessionID: args[0], CallID: args[1], Before: *before, File: *file}, cliIO(stdin, stdout, stderr))
	}
	return cmd
}
