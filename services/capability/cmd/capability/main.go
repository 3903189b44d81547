// Command capability runs the capability service alone.
package main

import (
	"context"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/services/capability"
)

func main() { app.Main(realMain) }

func realMain(ctx context.Context) error { return capability.Run(ctx, config.OS()) }
