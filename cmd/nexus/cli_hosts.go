package main

import (
	"io"

	"github.com/spf13/cobra"

	"nexus.local/cmd/nexus/internal/cli"
)

// hostsCmd is `nexus hosts`: the caller's linked hosts, and `nexus hosts
// approve CODE` to link the runtime that printed CODE.
func hostsCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "list your linked desktop hosts",
		Args:  usageArgs(cobra.NoArgs),
	}
	conn := connFlags(cmd)
	out := addOutputFlag(cmd, "one object {\"linkedHosts\": [...]} in protojson")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return cli.Hosts(cmd.Context(), cli.HostsOptions{Conn: conn(), Output: out.v}, cliIO(stdin, stdout, stderr))
	}
	approve := &cobra.Command{
		Use:   "approve CODE",
		Short: "link the host runtime that printed CODE to you",
		Args:  usageArgs(cobra.ExactArgs(1)),
	}
	aconn := connFlags(approve)
	aout := addOutputFlag(approve, "the linked host in protojson")
	approve.RunE = func(cmd *cobra.Command, args []string) error {
		return cli.ApproveHost(cmd.Context(), cli.HostsOptions{Conn: aconn(), Output: aout.v}, args[0], cliIO(stdin, stdout, stderr))
	}
	cmd.AddCommand(approve)
	return cmd
}
