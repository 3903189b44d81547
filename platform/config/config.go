// Package config loads typed configuration from the environment.
//
// Every service declares a struct with `env` tags; Load fills it from a
// Lookuper so tests can pass a map instead of touching the process environment.
package config

import (
	"context"
	"fmt"

	"github.com/sethvargo/go-envconfig"
)

// Lookuper finds environment values; envconfig.OsLookuper() reads the process
// environment and envconfig.MapLookuper(m) reads a map.
type Lookuper = envconfig.Lookuper

// OS returns a Lookuper over the process environment.
func OS() Lookuper { return envconfig.OsLookuper() }

// Map returns a Lookuper over m, for tests and for wiring services in one process.
func Map(m map[string]string) Lookuper { return envconfig.MapLookuper(m) }

// Load fills cfg, a pointer to a struct with `env` tags, from l.
func Load(ctx context.Context, l Lookuper, cfg any) error {
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: cfg, Lookuper: l}); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	return nil
}

// Overlay returns a Lookuper that answers from overrides first, then from base.
// nexus dev uses it to point services at each other's loopback listeners.
func Overlay(overrides map[string]string, base Lookuper) Lookuper {
	return envconfig.MultiLookuper(envconfig.MapLookuper(overrides), base)
}
