// Command model-router runs the model-router service alone.
package main

import (
	"context"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/services/modelrouter"
)

func main() { app.Main(realMain) }

func realMain(ctx context.Context) error { return modelrouter.Run(ctx, config.OS()) }
