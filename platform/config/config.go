// Package config loads typed configuration from the environment.
//
// Every service declares a struct with `env` tags; Load fills it from a
// Lookuper so tests can pass a map instead of touching the process environment.
package config

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// Lookuper finds environment values; envconfig.OsLookuper() reads the process
// environment and envconfig.MapLookuper(m) reads a map.
type Lookuper = envconfig.Lookuper

// OS returns a Lookuper over the process environment.
func OS() Lookuper { return envconfig.OsLookuper() }

// Map returns a Lookuper over m, for tests and for wiring services in one process.
func Map(m map[string]string) Lookuper { return envconfig.MapLookuper(m) }

// Validator is a configuration that checks its own limits; Load calls it, so
// a bad value is refused, named, where every process reads its settings.
type Validator interface {
	Validate() error
}

// Load fills cfg, a pointer to a struct with `env` tags, from l, then checks
// it when it is a Validator.
func Load(ctx context.Context, l Lookuper, cfg any) error {
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: cfg, Lookuper: l}); err != nil {
		if name := settingOf(cfg, err); name != "" {
			return fmt.Errorf("load config: %s: %w", name, err)
		}
		return fmt.Errorf("load config: %w", err)
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("check config: %w", err)
		}
	}
	return nil
}

// From returns a T loaded from l and checked as Load does.
func From[T any](ctx context.Context, l Lookuper) (T, error) {
	var cfg T
	err := Load(ctx, l, &cfg)
	return cfg, err
}

// Overlay returns a Lookuper that answers from overrides first, then from base.
// nexus dev uses it to point services at each other's loopback listeners.
func Overlay(overrides map[string]string, base Lookuper) Lookuper {
	return envconfig.MultiLookuper(envconfig.MapLookuper(overrides), base)
}

// settingOf names the environment variable behind the field an envconfig
// error starts with ("Limit: strconv.ParseInt: ..."), or the path of fields
// for a nested struct ("Identity: DevMode: ..."), so the person sees the
// setting they wrote rather than a Go field name.
func settingOf(cfg any, err error) string {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	rest := err.Error()
	for {
		field, more, ok := strings.Cut(rest, ":")
		if !ok || t.Kind() != reflect.Struct {
			return ""
		}
		f, found := t.FieldByName(strings.TrimSpace(field))
		if !found {
			return envName(t, strings.TrimSpace(field))
		}
		if tag, _, _ := strings.Cut(f.Tag.Get("env"), ","); tag != "" {
			return tag
		}
		t, rest = f.Type, more
	}
}

// envName finds the env tag of the field named name in t or its nested structs.
func envName(t reflect.Type, name string) string {
	if t.Kind() != reflect.Struct {
		return ""
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if f.Name == name && tag != "" {
			return tag
		}
		if f.Type.Kind() == reflect.Struct {
			if n := envName(f.Type, name); n != "" {
				return n
			}
		}
	}
	return ""
}
