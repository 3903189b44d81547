// Package logging builds the structured logger every Nexus process uses and
// carries it in a context.
//
// Messages are lowercase; keys are consistent across services: service, session,
// run, tool_call, addr, err.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

type ctxKey struct{}

// Config selects the log level and format.
type Config struct {
	// Level is debug, info, warn or error.
	Level string `env:"NEXUS_LOG_LEVEL, default=info"`
	// Format is text or json.
	Format string `env:"NEXUS_LOG_FORMAT, default=text"`
	// File, when set, is where the logs go (appended) instead of stderr:
	// nexus dev keeps its terminal for the person and its logs in its data
	// folder.
	File string `env:"NEXUS_LOG_FILE"`
}

// New returns a logger writing to w.
func New(w io.Writer, cfg Config) *slog.Logger {
	var level slog.Level
	switch strings.ToLower(cfg.Level) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.Format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// WithLogger returns a context that carries l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// FromContext returns the logger in ctx, or one that discards everything.
func FromContext(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// Validate refuses a level or format this package does not know.
func (c *Config) Validate() error {
	switch strings.ToLower(c.Level) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("NEXUS_LOG_LEVEL=%q: want debug, info, warn or error", c.Level)
	}
	switch strings.ToLower(c.Format) {
	case "text", "json":
	default:
		return fmt.Errorf("NEXUS_LOG_FORMAT=%q: want text or json", c.Format)
	}
	return nil
}
