// Command orchestrator runs the orchestrator service alone.
package main

import (
	"context"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/services/orchestrator"
)

func main() { app.Main(realMain) }

func realMain(ctx context.Context) error { return orchestrator.Run(ctx, config.OS()) }
