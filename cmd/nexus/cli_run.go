package main

import (
	"context"
	"io"

	"nexus.local/cmd/nexus/internal/cli"
)

// runCommand is `nexus run`: a prompt, streamed to the terminal, with tool
// calls carried to the paired host runtime.
func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Run(ctx, args, cliIO(stdout, stderr))
}
