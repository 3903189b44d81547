package main

import (
	"context"
	"fmt"

	"nexus.local/gateway"
	"nexus.local/platform/config"
	"nexus.local/services/capability"
	"nexus.local/services/modelrouter"
	"nexus.local/services/orchestrator"
)

// serviceCommand runs one service alone, configured by the environment.
func serviceCommand(ctx context.Context, name string) error {
	env := config.OS()
	switch name {
	case "orchestrator":
		return orchestrator.Run(ctx, env)
	case "model-router":
		return modelrouter.Run(ctx, env)
	case "capability":
		return capability.Run(ctx, env)
	case "gateway":
		return gateway.Run(ctx, env)
	}
	return fmt.Errorf("unknown service %q", name)
}
