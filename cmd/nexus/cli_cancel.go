package main

import (
	"context"
	"io"

	"nexus.local/cmd/nexus/internal/cli"
)

// cancelCommand is `nexus cancel SESSION`: stop the session's active run.
func cancelCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Cancel(ctx, args, cliIO(stdout, stderr))
}
