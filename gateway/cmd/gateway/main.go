// Command gateway runs the HTTP gateway alone.
package main

import (
	"context"

	"nexus.local/gateway"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
)

func main() { app.Main(realMain) }

func realMain(ctx context.Context) error { return gateway.Run(ctx, config.OS()) }
