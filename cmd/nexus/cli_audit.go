package main

import (
	"context"
	"io"

	"nexus.local/cmd/nexus/internal/cli"
)

// auditCommand is `nexus audit SESSION`: the session's runs and the exact
// scripts that left for its host.
func auditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Audit(ctx, args, cliIO(stdout, stderr))
}
