package main

import (
	"context"
	"io"

	"nexus.local/cmd/nexus/internal/cli"
)

// sessionsCommand is `nexus sessions`: the caller's sessions, newest first.
func sessionsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Sessions(ctx, args, cliIO(stdout, stderr))
}
