package main

import (
	"io"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
)

// auditCmd is `nexus audit SESSION`: the session's runs and the exact
// scripts that left for its host.
func auditCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit [--wide] [--code] SESSION",
		Short: "a session's runs and the exact scripts that left: nexus audit [--code] SESSION",
		Args:  usageArgs(cobra.ExactArgs(1)),
	}
	conn := connFlags(cmd)
	out := addOutputFlag(cmd, "one object {\"sessionId\", \"runs\", \"dispatches\"} in protojson")
	code := cmd.Flags().Bool("code", false, "print the exact bytes of every script that left")
	wide := cmd.Flags().Bool("wide", false, "every column: run and call ids, models, tool calls, full hashes, the capability version, users (past 100 columns)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cli.Audit(cmd.Context(), cli.AuditOptions{Conn: conn(), SessionID: args[0], Code: *code, Wide: *wide, Output: out.v}, cliIO(stdin, stdout, stderr))
	}
	return cmd
}
